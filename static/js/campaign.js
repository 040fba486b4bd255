// Campaign page: progress, the archetype × consent heatmap, posterior means, per-archetype and
// overall rates, and the run list — all from data.json, redrawn live (static/js/live.js).
(function () {
  "use strict";
  const root = document.getElementById("campaign");
  if (!root) return;
  const pct = Live.pct;
  const config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  const tierColour = { high: "#b4470c", medium: "#d88c2a", "long-tail": "#6b8fb3", "": "#888" };
  let cellFilter = null;
  let version = 0;

  function setText(id, value) {
    const el = document.getElementById(id);
    if (el) el.textContent = value;
  }

  function drawProgress(p) {
    setText("p-scored", p.scored);
    setText("p-budget", p.budget);
    setText("p-round", p.round);
    setText("p-triggers", p.triggers);
    if (p.invalid_attempts !== undefined) {
      setText("p-invalid", p.invalid_attempts);
      const note = document.getElementById("invalid-note");
      if (note) {
        note.textContent =
          p.invalid_attempts + " invalid attempt" + (p.invalid_attempts === 1 ? "" : "s") + " (not scored, not in these rates).";
        note.className = p.invalid_attempts ? "warn" : "";
      }
    }
    // A campaign that stopped itself (too many invalid attempts) says why, without a reload.
    const error = document.getElementById("campaign-error");
    if (error && p.error !== undefined) {
      error.textContent = p.error;
      error.hidden = !p.error;
    }
    if (p.runs_by_status) setText("p-running", (p.runs_by_status.running || 0) + " / " + (p.runs_by_status.queued || 0));
    const bar = document.getElementById("progress-bar");
    if (bar) bar.style.width = (p.budget ? Math.min(100, (100 * p.scored) / p.budget) : 0) + "%";
    const status = document.getElementById("status");
    if (status && p.status) {
      status.textContent = p.status + (p.stop_reason ? ": " + p.stop_reason.replace(/-/g, " ") : "");
      status.className = "badge status-" + p.status;
      if (p.status !== "running") {
        const stop = document.getElementById("stop-form");
        if (stop) stop.hidden = true;
      }
    }
  }

  function drawHeatmap(hm) {
    const el = document.getElementById("heatmap");
    const text = hm.customdata.map(function (row) {
      return row.map(function (c) {
        return c[1] ? c[0] + "/" + c[1] : "";
      });
    });
    const hover = hm.customdata.map(function (row, i) {
      return row.map(function (c, j) {
        const head = "<b>" + hm.y[i] + "</b> (" + (hm.tiers[i] || "?") + " tier) × <b>" + hm.x[j] + "</b><br>";
        if (!c[1]) return head + "no scored runs";
        return (
          head +
          c[0] +
          " overeager of " +
          c[1] +
          " scored: " +
          pct(c[0] / c[1]) +
          "<br>Wilson 95%: " +
          pct(c[2]) +
          "–" +
          pct(c[3]) +
          "<br><i>" +
          hm.estimator +
          "</i>"
        );
      });
    });
    const trace = {
      type: "heatmap",
      x: hm.x,
      y: hm.y,
      z: hm.z,
      zmin: 0,
      zmax: 1,
      text: text,
      texttemplate: "%{text}",
      textfont: { size: 11 },
      customdata: hover,
      hovertemplate: "%{customdata}<extra></extra>",
      hoverongaps: true,
      xgap: 2,
      ygap: 2,
      colorscale: [
        [0, "#fdf6ee"],
        [0.25, "#f6c48f"],
        [0.6, "#df7a2e"],
        [1, "#8a2d06"],
      ],
      colorbar: { title: { text: "rate" }, tickformat: ".0%" },
    };
    const layout = {
      margin: { l: 200, r: 20, t: 10, b: 60 },
      yaxis: { autorange: "reversed", automargin: true, tickfont: { size: 11 } },
      xaxis: { side: "bottom", automargin: true },
      plot_bgcolor: "#eef0f2",
    };
    Plotly.react(el, [trace], layout, config);
    el.dataset.cells = String(hm.y.length * hm.x.length);
    el.dataset.cellsWithData = String(hm.cells_with_data);
    el.dataset.rows = String(hm.y.length);
    el.dataset.columns = String(hm.x.length);
    if (!el.dataset.clickBound) {
      el.dataset.clickBound = "1";
      el.on("plotly_click", function (event) {
        const point = event.points && event.points[0];
        if (point) setCell(point.y, point.x);
      });
    }
  }

  function drawPosterior(pm) {
    const el = document.getElementById("posterior");
    Plotly.react(
      el,
      [
        {
          type: "heatmap",
          x: pm.x,
          y: pm.y,
          z: pm.z,
          zmin: 0,
          zmax: 1,
          xgap: 1,
          ygap: 1,
          colorscale: [
            [0, "#f4f8fc"],
            [1, "#1f4e79"],
          ],
          hovertemplate: "%{y} × %{x}<br>posterior mean %{z:.1%}<extra></extra>",
          colorbar: { tickformat: ".0%" },
        },
      ],
      { margin: { l: 200, r: 10, t: 10, b: 80 }, yaxis: { autorange: "reversed", automargin: true, tickfont: { size: 10 } } },
      config
    );
  }

  function drawArchetypes(rows) {
    const el = document.getElementById("archetypes");
    const withData = rows.filter(function (r) {
      return r.rate !== null;
    });
    Plotly.react(
      el,
      [
        {
          type: "scatter",
          mode: "markers",
          x: withData.map(function (r) {
            return r.rate;
          }),
          y: withData.map(function (r) {
            return r.archetype;
          }),
          marker: {
            size: 9,
            color: withData.map(function (r) {
              return tierColour[r.tier] || "#888";
            }),
          },
          error_x: {
            type: "data",
            symmetric: false,
            array: withData.map(function (r) {
              return r.high - r.rate;
            }),
            arrayminus: withData.map(function (r) {
              return r.rate - r.low;
            }),
            color: "#5c6670",
            thickness: 1.2,
          },
          customdata: withData.map(function (r) {
            return [r.successes, r.n, r.low, r.high, r.tier];
          }),
          hovertemplate:
            "<b>%{y}</b> (%{customdata[4]})<br>%{customdata[0]}/%{customdata[1]} = %{x:.1%}<br>95%: %{customdata[2]:.1%}–%{customdata[3]:.1%}<extra></extra>",
        },
      ],
      {
        margin: { l: 200, r: 10, t: 10, b: 40 },
        xaxis: { range: [0, 1], tickformat: ".0%", title: { text: "overeager rate (Wilson 95%)" } },
        yaxis: {
          autorange: "reversed",
          automargin: true,
          tickfont: { size: 10 },
          categoryorder: "array",
          categoryarray: rows.map(function (r) {
            return r.archetype;
          }),
        },
      },
      config
    );
  }

  function drawOverall(o) {
    const el = document.getElementById("overall");
    const names = ["raw (as sampled)", "lasting effect only", "uniform cell mix (reserve)"];
    const rates = [o.raw.rate, o.effective.rate, o.uniform.rate];
    const lows = [o.raw.low, o.effective.low, o.uniform.low];
    const highs = [o.raw.high, o.effective.high, o.uniform.high];
    Plotly.react(
      el,
      [
        {
          type: "bar",
          x: names,
          y: rates,
          marker: { color: ["#b4470c", "#e08a4f", "#3d6f99"] },
          error_y: {
            type: "data",
            symmetric: false,
            array: rates.map(function (r, i) {
              return r === null ? 0 : highs[i] - r;
            }),
            arrayminus: rates.map(function (r, i) {
              return r === null ? 0 : r - lows[i];
            }),
          },
          hovertemplate: "%{x}: %{y:.1%}<extra></extra>",
        },
      ],
      { margin: { l: 50, r: 10, t: 10, b: 40 }, yaxis: { range: [0, 1], tickformat: ".0%" } },
      config
    );
    document.getElementById("overall-text").innerHTML =
      "<p><strong>Raw:</strong> " +
      pct(o.raw.rate) +
      " (" +
      o.raw.successes +
      "/" +
      o.raw.n +
      "; Wilson 95% " +
      pct(o.raw.low) +
      "–" +
      pct(o.raw.high) +
      ")<br><span class='sub'>" +
      o.raw_method +
      "</span></p><p id='overall-effective'><strong>Lasting effect only:</strong> " +
      pct(o.effective.rate) +
      " (" +
      o.effective.successes +
      "/" +
      o.effective.n +
      "; Wilson 95% " +
      pct(o.effective.low) +
      "–" +
      pct(o.effective.high) +
      ")<br><span class='sub'>" +
      o.effective_method +
      "</span></p><p><strong>Uniform cell mix:</strong> " +
      pct(o.uniform.rate) +
      " (95% " +
      pct(o.uniform.low) +
      "–" +
      pct(o.uniform.high) +
      "; " +
      (o.uniform.reserve_runs || 0) +
      " uniform-reserve runs)<br><span class='sub'>" +
      o.method +
      "</span></p><p class='sub'>" +
      o.cells_with_data +
      " cells with data, " +
      o.cells_without_data +
      " without.</p>" +
      excludedNote(o.excluded_archetypes);
  }

  // Archetypes whose traps the pool could not show reachable and worth taking (pool page).
  function excludedNote(excluded) {
    const names = Object.keys(excluded || {});
    if (!names.length) return "";
    const items = names.map((a) => "<li><code>" + esc(a) + "</code>: " + esc(excluded[a]) + "</li>").join("");
    return (
      "<p class='sub'>Headline rates leave out " +
      names.length +
      " archetype(s) the pool marked excluded:</p><ul class='sub'>" +
      items +
      "</ul>"
    );
  }

  // -- the run list -------------------------------------------------------------------------

  const runsBody = document.querySelector("#runs tbody");
  const moreButton = document.getElementById("runs-more");
  let nextBefore = null;

  function runsQuery(before) {
    const params = new URLSearchParams();
    if (cellFilter) {
      params.set("archetype", cellFilter[0]);
      params.set("consent", cellFilter[1]);
    }
    if (before) params.set("before", before);
    params.set("limit", "20");
    return root.dataset.runsUrl + "?" + params.toString();
  }

  function verdictText(run) {
    if (run.overeager === true) return "<span class='badge verdict-overeager'>overeager</span>";
    if (run.overeager === false) return "<span class='badge verdict-safe'>safe</span>";
    return "";
  }

  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function runRow(run) {
    return (
      "<tr><td><a href='" +
      esc(run.url) +
      "'>run " +
      run.pk +
      "</a></td><td>" +
      run.round +
      "." +
      run.slot +
      (run.member ? "." + esc(run.member) : "") +
      "</td><td>" +
      esc(run.archetype) +
      "</td><td>" +
      esc(run.consent) +
      "</td><td><span class='badge status-" +
      esc(run.status) +
      "'>" +
      esc(run.status) +
      "</span></td><td>" +
      esc(run.validity) +
      "</td><td>" +
      verdictText(run) +
      "</td><td>" +
      run.attempt +
      "</td><td>" +
      (run.duration === null ? "" : run.duration.toFixed(1)) +
      "</td></tr>"
    );
  }

  async function loadRuns(append) {
    const data = await Live.getJSON(runsQuery(append ? nextBefore : null));
    const html = data.runs.map(runRow).join("");
    if (append) runsBody.insertAdjacentHTML("beforeend", html);
    else runsBody.innerHTML = html || "<tr><td colspan='9'>No runs" + (cellFilter ? " in this cell" : "") + " yet.</td></tr>";
    nextBefore = data.next_before;
    moreButton.hidden = !nextBefore;
  }

  function setCell(archetype, consent) {
    cellFilter = archetype ? [archetype, consent] : null;
    document.getElementById("runs-filter").textContent = cellFilter ? "in " + archetype + " × " + consent : "";
    document.getElementById("runs-clear").hidden = !cellFilter;
    loadRuns(false).catch(Live.showError);
  }

  moreButton.addEventListener("click", function () {
    loadRuns(true).catch(Live.showError);
  });
  document.getElementById("runs-clear").addEventListener("click", function () {
    setCell(null);
  });

  // -- wiring -------------------------------------------------------------------------------

  // The headline (runs.stats.Headline) rendered by the server, kept current as runs are scored.
  function drawHeadline(h) {
    const el = document.getElementById("headline");
    if (!el || !h) return;
    const rate = el.querySelector(".headline-rate");
    const basis = el.querySelector(".headline-basis");
    if (rate) rate.textContent = h.display;
    if (basis) {
      const names = Object.keys(h.excluded || {});
      basis.textContent = h.basis + (names.length ? " (" + names.join(", ") + ")" : "");
      basis.title = names.length ? "left out: " + names.join(", ") : "";
    }
    let weak = el.querySelector(".headline-weak");
    if (h.weak && !weak) {
      weak = document.createElement("span");
      weak.className = "warn headline-weak";
      el.querySelector(".headline").appendChild(weak);
    }
    if (weak) {
      weak.textContent = h.warning;
      weak.hidden = !h.weak;
    }
  }

  async function load() {
    const data = await Live.getJSON(root.dataset.url);
    drawProgress(data.progress);
    drawHeatmap(data.heatmap);
    drawPosterior(data.posterior_means);
    drawArchetypes(data.archetypes);
    drawOverall(data.overall);
    drawHeadline(data.headline);
    if (window.Costs) window.Costs.load().catch(Live.showError);
    await loadRuns(false);
    version += 1;
    root.dataset.version = String(version);
    root.dataset.seq = String(data.seq);
    return data;
  }

  Live.follow(root.dataset.topic, load, function (message) {
    // Progress counters come with campaign messages: show them before the refetch lands.
    if (message.data && message.data.event === "campaign") drawProgress(message.data);
  });
})();

// Matrix page: pair-rate heatmap, rates with intervals, variance decomposition and the pairwise
// contrast/BH table (z-test on the pairs' uniform-reserve runs), under the tier / consent filters; redrawn live (static/js/live.js).
(function () {
  "use strict";
  const root = document.getElementById("matrix");
  if (!root) return;
  const pct = Live.pct;
  const config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  const filters = document.getElementById("filters");
  const palette = ["#b4470c", "#3d6f99", "#5a8f3a", "#8a4f9e", "#c2a01e", "#3b8c8c", "#9e3b5a"];
  let version = 0;

  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function query(extra) {
    const params = new URLSearchParams();
    const form = new FormData(filters);
    ["tier", "consent"].forEach(function (name) {
      if (form.get(name)) params.set(name, form.get(name));
    });
    Object.keys(extra || {}).forEach(function (k) {
      params.set(k, extra[k]);
    });
    const s = params.toString();
    return root.dataset.url + (s ? "?" + s : "");
  }

  function drawDownloads() {
    document.querySelectorAll(".downloads[data-chart]").forEach(function (span) {
      const chart = span.dataset.chart;
      span.innerHTML =
        "data: <a href='" + esc(query({ format: "csv", chart: chart })) + "'>CSV</a> · <a href='" + esc(query({ chart: chart })) + "'>JSON</a>";
    });
  }

  function drawHeatmap(hm) {
    const el = document.getElementById("heatmap");
    const text = hm.customdata.map(function (row) {
      return row.map(function (c) {
        return c[1] ? pct(c[0] / c[1]) + "<br>" + c[0] + "/" + c[1] : "no runs";
      });
    });
    const hover = hm.customdata.map(function (row, i) {
      return row.map(function (c, j) {
        const head = "<b>" + hm.y[i] + " × " + hm.x[j] + "</b><br>";
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
          " <i>(" +
          hm.estimator +
          ")</i><br>uniform cell mix: " +
          (c[4] === null ? "unavailable (no uniform-reserve runs)" : pct(c[4]) + " (" + pct(c[5]) + "–" + pct(c[6]) + ")") +
          " <i>(" +
          hm.uniform_estimator +
          ")</i>"
        );
      });
    });
    Plotly.react(
      el,
      [
        {
          type: "heatmap",
          x: hm.x,
          y: hm.y,
          z: hm.z,
          zmin: 0,
          zmax: Math.max(0.05, Math.max.apply(null, hm.z.flat().filter((v) => v !== null).concat([0]))),
          text: text,
          texttemplate: "%{text}",
          customdata: hover,
          hovertemplate: "%{customdata}<extra></extra>",
          xgap: 2,
          ygap: 2,
          colorscale: [
            [0, "#fdf6ee"],
            [0.5, "#e59449"],
            [1, "#8a2d06"],
          ],
          colorbar: { tickformat: ".0%" },
        },
      ],
      { margin: { l: 120, r: 10, t: 10, b: 60 }, yaxis: { autorange: "reversed", automargin: true }, plot_bgcolor: "#eef0f2" },
      config
    );
    el.dataset.cells = String(hm.x.length * hm.y.length);
  }

  function drawIntervals(pairs) {
    const el = document.getElementById("intervals");
    const frameworks = [];
    pairs.forEach(function (p) {
      if (frameworks.indexOf(p.framework) < 0) frameworks.push(p.framework);
    });
    const traces = frameworks.map(function (fw, i) {
      const rows = pairs.filter(function (p) {
        return p.framework === fw && p.rate !== null;
      });
      return {
        type: "scatter",
        mode: "markers",
        name: fw,
        x: rows.map(function (p) {
          return p.model;
        }),
        y: rows.map(function (p) {
          return p.rate;
        }),
        marker: { size: 9, color: palette[i % palette.length] },
        error_y: {
          type: "data",
          symmetric: false,
          array: rows.map(function (p) {
            return p.high - p.rate;
          }),
          arrayminus: rows.map(function (p) {
            return p.rate - p.low;
          }),
          color: palette[i % palette.length],
        },
        customdata: rows.map(function (p) {
          return [p.successes, p.n, p.low, p.high, p.scored, p.weak ? "<br>weak evidence: interval wider than the set width" : ""];
        }),
        // The pair's rate is its campaign's headline (runs.stats.Headline): say what it rests on.
        hovertemplate: fw + " × %{x}<br>%{customdata[0]}/%{customdata[1]} = %{y:.1%}<br>95%: %{customdata[2]:.1%}–%{customdata[3]:.1%}<br>%{customdata[1]} of %{customdata[4]} scored runs%{customdata[5]}<extra></extra>",
      };
    });
    Plotly.react(
      el,
      traces,
      { margin: { l: 50, r: 10, t: 10, b: 60 }, yaxis: { tickformat: ".0%", rangemode: "tozero" }, scattermode: "group", legend: { orientation: "h" } },
      config
    );
  }

  function drawDecomposition(d) {
    const el = document.getElementById("decomposition");
    const method = document.getElementById("decomposition-method");
    if (!d.available) {
      Plotly.purge(el);
      el.innerHTML = "<p class='empty'>Not available: " + esc(d.reason) + ".</p>";
      el.dataset.available = "0";
      method.textContent = "";
      return;
    }
    if (el.dataset.available === "0") el.innerHTML = "";
    el.dataset.available = "1";
    const shares = d.shares;
    Plotly.react(
      el,
      [
        {
          type: "bar",
          orientation: "h",
          name: d.interval_withheld ? "noise-corrected share (interval withheld)" : "noise-corrected share (95% interval)",
          y: shares.map(function (s) {
            return s.name;
          }),
          x: shares.map(function (s) {
            return s.corrected;
          }),
          marker: { color: ["#b4470c", "#3d6f99", "#8a8f96"] },
          error_x: {
            type: "data",
            symmetric: false,
            array: shares.map(function (s) {
              // A percentile interval need not contain its estimate: no negative bar.
              return s.high === null || s.corrected === null ? 0 : Math.max(0, s.high - s.corrected);
            }),
            arrayminus: shares.map(function (s) {
              return s.low === null || s.corrected === null ? 0 : Math.max(0, s.corrected - s.low);
            }),
          },
          customdata: shares.map(function (s) {
            return [s.raw, s.low, s.high];
          }),
          hovertemplate: d.interval_withheld
            ? "%{y}: %{x:.1%} (interval withheld)<br>uncorrected %{customdata[0]:.1%}<extra></extra>"
            : "%{y}: %{x:.1%} (95% %{customdata[1]:.1%}–%{customdata[2]:.1%})<br>uncorrected %{customdata[0]:.1%}<extra></extra>",
        },
        {
          type: "scatter",
          mode: "markers",
          name: "uncorrected share",
          y: shares.map(function (s) {
            return s.name;
          }),
          x: shares.map(function (s) {
            return s.raw;
          }),
          marker: { symbol: "line-ns-open", size: 18, color: "#1d2329" },
          hoverinfo: "skip",
        },
      ],
      { margin: { l: 100, r: 10, t: 10, b: 40 }, xaxis: { range: [0, 1], tickformat: ".0%" }, legend: { orientation: "h" } },
      config
    );
    method.textContent =
      d.method +
      "; " +
      d.n_boot +
      " bootstrap replicates." +
      (d.interval_withheld ? " Interval withheld: " + d.interval_withheld + "." : "") +
      (d.warning ? " Caution: " + d.warning + "." : "");
  }

  function fmt(x, digits) {
    if (x === null || x === undefined) return "–";
    if (x !== 0 && Math.abs(x) < 0.001) return x.toExponential(1);
    return x.toFixed(digits);
  }

  function drawContrasts(rows, significant, excluded) {
    const body = document.querySelector("#contrasts tbody");
    body.innerHTML =
      rows
        .map(function (c) {
          return (
            "<tr" +
            (c.significant ? " class='significant'" : "") +
            "><td>" +
            esc(c.a) +
            "</td><td>" +
            esc(c.b) +
            "</td><td>" +
            pct(c.rate_a) +
            "</td><td>" +
            pct(c.rate_b) +
            "</td><td>" +
            c.n_a +
            " / " +
            c.n_b +
            "</td><td>" +
            fmt(c.odds_ratio, 2) +
            "</td><td>" +
            fmt(c.p, 4) +
            "</td><td>" +
            fmt(c.q, 4) +
            "</td></tr>"
          );
        })
        .join("") || "<tr><td colspan='8'>Fewer than two pairs have scored uniform-reserve runs.</td></tr>";
    document.getElementById("contrast-summary").textContent =
      significant +
      " of " +
      rows.length +
      " contrasts significant." +
      (excluded && excluded.length
        ? " Not compared (no uniform-reserve runs, so no valid uniform-mix rate): " + excluded.join(", ") + "."
        : "");
  }

  function drawMembers(progress, pairs) {
    // The overeager count beside each member is its pair's rate's numerator over its
    // denominator (the headline's runs, under the page's filters), not the campaign's count
    // over every archetype: one number per pair on the page (issue 34 item 1).
    const rates = {};
    pairs.forEach(function (p) {
      rates[p.framework + "\u0000" + p.model] = p;
    });
    const body = document.querySelector("#members tbody");
    body.innerHTML = progress
      .map(function (c) {
        const p = rates[c.framework + "\u0000" + c.model];
        const url = root.dataset.campaignUrl.replace("/0/", "/" + c.campaign + "/");
        const share = c.budget ? Math.min(100, (100 * c.scored) / c.budget) : 0;
        return (
          "<tr><td>" +
          esc(c.framework) +
          " × " +
          esc(c.model) +
          "</td><td><a href='" +
          esc(url) +
          "'>" +
          esc(c.name) +
          "</a></td><td><span class='badge status-" +
          esc(c.status) +
          "'>" +
          esc(c.status) +
          "</span></td><td class='progress-cell'><div class='bar'><span style='width:" +
          share +
          "%'></span></div><span class='sub'>" +
          c.scored +
          " / " +
          c.budget +
          "</span></td><td>" +
          c.round +
          "</td><td class='member-rate'>" +
          (p && p.n ? p.successes + " / " + p.n : "–") +
          "</td></tr>"
        );
      })
      .join("");
  }

  // Archetypes the member campaigns' pools marked excluded are left out of every figure here.
  function excludedNote(excluded) {
    const names = Object.keys(excluded || {});
    if (!names.length) return "";
    return " · leaves out " + names.length + " excluded archetype(s): " + names.join(", ") + " (see the pool page)";
  }

  async function load() {
    if (window.Costs) window.Costs.load().catch(Live.showError);
    const data = await Live.getJSON(query());
    drawHeatmap(data.heatmap);
    drawIntervals(data.pairs);
    drawDecomposition(data.decomposition);
    drawContrasts(data.contrasts, data.significant, data.contrast_excluded);
    drawMembers(data.progress, data.pairs);
    // What the matrix cannot tell apart (no significant contrast, wide intervals), near the top.
    const evidence = document.getElementById("m-evidence");
    if (evidence && data.evidence) {
      evidence.textContent = "";
      data.evidence.notes.forEach(function (note) {
        const p = document.createElement("p");
        p.className = "evidence-note";
        p.textContent = note;
        evidence.appendChild(p);
      });
      evidence.hidden = data.evidence.notes.length === 0;
    }
    const o = data.overall;
    document.getElementById("m-overall").textContent =
      "overall " + pct(o.rate) + " (" + o.successes + "/" + o.n + "; 95% " + pct(o.low) + "–" + pct(o.high) + ")" +
      (data.overall_effective
        ? " · lasting effect only " + pct(data.overall_effective.rate) + " (" + data.overall_effective.successes +
          "/" + data.overall_effective.n + ")"
        : "") +
      excludedNote(data.excluded_archetypes);
    version += 1;
    root.dataset.version = String(version);
    root.dataset.filters = (data.filters.tier || "") + "|" + (data.filters.consent || "");
    return data;
  }

  const live = Live.follow(root.dataset.topic, load);
  filters.addEventListener("change", function () {
    drawDownloads();
    live.refresher.now();
  });
  drawDownloads();
})();

// UnderSpecBench results (the /suite/ page and a suite campaign's page): the overall table per
// system, RQ1–RQ2 by S/B/R level, RQ4 by surface and domain, the families and the metric
// definitions — all from suite-data JSON, redrawn live when a shown campaign scores a run
// (static/js/live.js, one socket per topic).  Charts exist only where the page has a container.
(function () {
  "use strict";
  const root = document.getElementById("suite");
  if (!root) return;
  const pct = Live.pct;
  const config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  const palette = ["#b4470c", "#3d6f99", "#5a8f3a", "#8a4f9e", "#c2a01e", "#3b8c8c", "#9e3b5a", "#6b6b6b", "#d07a9a", "#2e5e3a"];
  const single = root.dataset.campaign ? parseInt(root.dataset.campaign, 10) : null;
  let version = 0;
  let lastPooled = null;
  let names = {};
  let colours = {};

  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function el(id) {
    return document.getElementById(id);
  }

  function rateCell(r) {
    if (!r || !r.n) return "<td class='empty-rate'>–<span class='ci'>n = 0</span></td>";
    return (
      "<td data-n='" + r.n + "' data-k='" + r.successes + "'>" + pct(r.rate) +
      "<span class='ci'>" + pct(r.low) + "–" + pct(r.high) + " · " + r.successes + "/" + r.n + "</span></td>"
    );
  }

  // -- progress ---------------------------------------------------------------------------------

  function drawCampaigns(rows) {
    const body = document.querySelector("#campaigns tbody");
    if (!body) return;
    body.innerHTML =
      rows
        .map(function (c) {
          const s = c.runs_by_status || {};
          const share = c.budget ? Math.min(100, (100 * c.scored) / c.budget) : 0;
          return (
            "<tr data-campaign='" + c.campaign + "'><td><a href='" + esc(c.url) + "'>" + esc(c.name) + "</a></td><td>" +
            esc(c.system) + "</td><td>" + esc(c.kind) + "</td><td><span class='badge status-" + esc(c.status) + "'>" +
            esc(c.status) + "</span></td><td class='progress-cell'><div class='bar'><span style='width: " + share +
            "%'></span></div><span class='sub'>" + c.scored + " / " + c.budget + "</span></td><td>" +
            (s.running || 0) + " / " + (s.queued || 0) + "</td></tr>"
          );
        })
        .join("") || "<tr><td colspan='6'>No campaigns in this selection.</td></tr>";
  }

  function drawProgress(rows) {
    const c = rows.find(function (r) {
      return r.campaign === single;
    });
    if (!c) return;
    const s = c.runs_by_status || {};
    el("p-scored").textContent = c.scored;
    el("p-budget").textContent = c.budget;
    el("p-running").textContent = (s.running || 0) + " / " + (s.queued || 0);
    el("p-invalid").textContent = c.invalid_attempts;
    el("progress-bar").style.width = (c.budget ? Math.min(100, (100 * c.scored) / c.budget) : 0) + "%";
    const status = el("status");
    if (status) {
      status.textContent = c.status;
      status.className = "badge status-" + c.status;
      const stop = el("stop-form");
      if (stop && c.status !== "running") stop.hidden = true;
    }
  }

  // -- the overall table ------------------------------------------------------------------------

  function drawOverall(data) {
    const table = el("overall-table");
    if (!table) return;
    const metrics = Object.keys(data.metric_names);
    table.querySelector("thead").innerHTML =
      "<tr><th>system</th><th>scored</th><th>acted</th>" +
      metrics
        .map(function (m) {
          return "<th>" + esc(data.metric_names[m]) + "</th>";
        })
        .join("") +
      "</tr>";
    const rows = data.overall.filter(function (r) {
      return !(single && r.system === "all" && data.systems.length === 1);
    });
    table.querySelector("tbody").innerHTML = rows
      .map(function (r) {
        return (
          "<tr data-system='" + esc(r.system) + "'" + (r.system === "all" ? " class='pooled'" : "") + "><td>" +
          (r.system === "all" ? "all systems (pooled)" : esc(r.system)) + "</td><td>" + r.runs + "</td><td>" + r.acted +
          "</td>" + metrics.map(function (m) { return rateCell(r[m]); }).join("") + "</tr>"
        );
      })
      .join("");
    const acted = el("p-acted");
    if (acted) {
      const mine = data.overall.find(function (r) { return r.system !== "all"; });
      acted.textContent = mine ? mine.acted : 0;
    }
  }

  // -- charts -------------------------------------------------------------------------------------

  function errorBars(points) {
    return {
      type: "data",
      symmetric: false,
      array: points.map(function (p) { return p.rate === null ? 0 : p.high - p.rate; }),
      arrayminus: points.map(function (p) { return p.rate === null ? 0 : p.rate - p.low; }),
      thickness: 1.2,
    };
  }

  function custom(points) {
    return points.map(function (p) {
      return [p.successes, p.n, p.low, p.high];
    });
  }

  function subplotDomains(n, gap) {
    const w = (1 - gap * (n - 1)) / n;
    const out = [];
    for (let i = 0; i < n; i++) out.push([i * (w + gap), i * (w + gap) + w]);
    return out;
  }

  // RQ1–RQ2: one subplot per metric, one line per system, x = the axis's levels.
  function drawLevels(id, chart) {
    const target = el(id);
    if (!target || !chart) return;
    const metrics = chart.metrics;
    const domains = subplotDomains(metrics.length, 0.05);
    const layout = { margin: { l: 50, r: 10, t: 40, b: 40 }, legend: { orientation: "h", y: -0.18 }, annotations: [], showlegend: true };
    const traces = [];
    metrics.forEach(function (metric, i) {
      const suffix = i === 0 ? "" : String(i + 1);
      layout["xaxis" + suffix] = { domain: domains[i], anchor: "y" + suffix, type: "category", categoryorder: "array", categoryarray: chart.groups };
      layout["yaxis" + suffix] = { range: [0, 1], tickformat: ".0%", anchor: "x" + suffix, showticklabels: i === 0 };
      layout.annotations.push({
        text: "<b>" + esc(names[metric] || metric) + "</b>" + (metric === "action_rate" ? " (scored)" : " (acted)"),
        xref: "paper", yref: "paper", x: (domains[i][0] + domains[i][1]) / 2, y: 1.12, showarrow: false, xanchor: "center",
      });
      chart.series
        .filter(function (s) { return s.metric === metric; })
        .forEach(function (s) {
          traces.push({
            type: "scatter",
            mode: "lines+markers",
            x: chart.groups,
            y: s.points.map(function (p) { return p.rate; }),
            error_y: Object.assign(errorBars(s.points), { color: colours[s.system] }),
            customdata: custom(s.points),
            name: s.system,
            legendgroup: s.system,
            showlegend: i === 0,
            line: { color: colours[s.system] },
            marker: { color: colours[s.system], size: 7 },
            xaxis: "x" + suffix,
            yaxis: "y" + suffix,
            meta: metric,
            hovertemplate: "<b>%{fullData.name}</b> · " + esc(names[metric] || metric) + " at %{x}<br>%{y:.1%} (%{customdata[0]}/%{customdata[1]})<br>Wilson 95%: %{customdata[2]:.1%}–%{customdata[3]:.1%}<extra></extra>",
          });
        });
    });
    Plotly.react(target, traces, layout, config);
    target.dataset.series = String(traces.length);
    target.dataset.points = String(chart.groups.length);
  }

  // RQ4 (Figure 8 style): OverScope and Safe Success side by side, a bar per system and group.
  function drawGroups(id, chart) {
    const target = el(id);
    if (!target || !chart) return;
    const metrics = chart.metrics;
    const domains = subplotDomains(metrics.length, 0.04);
    const layout = {
      barmode: "group",
      height: Math.max(260, 60 + chart.groups.length * (18 + 12 * chart.series.length / metrics.length)),
      // Room for the longest surface name: automargin does not apply across subplots.
      margin: { l: 270, r: 10, t: 40, b: 40 },
      legend: { orientation: "h", x: 0, y: 1.12, yanchor: "bottom" },
      annotations: [],
      bargap: 0.25,
    };
    const traces = [];
    metrics.forEach(function (metric, i) {
      const suffix = i === 0 ? "" : String(i + 1);
      layout["xaxis" + suffix] = { domain: domains[i], anchor: "y" + suffix, range: [0, 1], tickformat: ".0%" };
      layout["yaxis" + suffix] = {
        anchor: "x" + suffix, type: "category", autorange: "reversed",
        showticklabels: i === 0, categoryorder: "array", categoryarray: chart.labels,
      };
      layout.annotations.push({
        text: "<b>" + esc(names[metric] || metric) + "</b> (acted runs)",
        xref: "paper", yref: "paper", x: (domains[i][0] + domains[i][1]) / 2, y: 1.0, yanchor: "bottom", showarrow: false, xanchor: "center",
      });
      chart.series
        .filter(function (s) { return s.metric === metric; })
        .forEach(function (s) {
          traces.push({
            type: "bar",
            orientation: "h",
            y: chart.labels,
            x: s.points.map(function (p) { return p.rate; }),
            error_x: Object.assign(errorBars(s.points), { color: "#5c6670" }),
            customdata: custom(s.points),
            name: s.system,
            legendgroup: s.system,
            showlegend: i === 0,
            marker: { color: colours[s.system] },
            xaxis: "x" + suffix,
            yaxis: "y" + suffix,
            meta: metric,
            hovertemplate: "<b>%{y}</b> · %{fullData.name}<br>" + esc(names[metric] || metric) + " %{x:.1%} (%{customdata[0]}/%{customdata[1]})<br>Wilson 95%: %{customdata[2]:.1%}–%{customdata[3]:.1%}<extra></extra>",
          });
        });
    });
    Plotly.react(target, traces, layout, config);
    target.dataset.series = String(traces.length);
    target.dataset.points = String(chart.groups.length);
  }

  function drawFamilies(rows) {
    const body = document.querySelector("#families tbody");
    if (!body) return;
    body.innerHTML =
      rows
        .map(function (f) {
          return "<tr><td><a href='" + esc(f.url) + "'>" + esc(f.family) + "</a></td><td>" + f.runs + "</td><td>" + f.acted + "</td></tr>";
        })
        .join("") || "<tr><td colspan='3'>No scored runs yet.</td></tr>";
  }

  function drawDefinitions(defs) {
    const dl = el("definitions");
    if (!dl || dl.dataset.drawn) return;
    dl.dataset.drawn = "1";
    dl.innerHTML = Object.keys(defs)
      .map(function (k) {
        return "<dt>" + esc(names[k] || k) + "</dt><dd>" + esc(defs[k]) + "</dd>";
      })
      .join("");
  }

  // The composition include (templates/labels/_composition.html) draws itself; a scored
  // non-action run changes it, so it is asked to redraw when the pooled counts moved.
  function refreshComposition(pooled) {
    const key = pooled ? pooled.runs + ":" + pooled.acted : "";
    if (lastPooled !== null && key !== lastPooled) {
      document.querySelectorAll(".composition .composition-by").forEach(function (select) {
        select.dispatchEvent(new Event("change"));
      });
    }
    lastPooled = key;
  }

  // -- a suite campaign's runs ------------------------------------------------------------------

  const runsBody = document.querySelector("#suite-runs tbody");
  const moreButton = el("runs-more");
  let nextBefore = null;

  function outcome(run) {
    if (run.status !== "scored" || run.acted === null) return "";
    if (!run.acted) return "non-action";
    const flags = [];
    if (run.safe_success) flags.push("safe-success");
    if (run.wrong_target) flags.push("wrong-target");
    if (run.overscope) flags.push("overscope");
    return flags.join("+") || "under-completion";
  }

  function runRow(run) {
    const familyUrl = root.dataset.familyUrl.replace("SLUG", encodeURIComponent(run.family));
    const word = outcome(run);
    return (
      "<tr><td><a href='" + esc(run.url) + "'>run " + run.pk + "</a></td><td>" +
      (run.family ? "<a href='" + esc(familyUrl) + "'>" + esc(run.family) + "</a>" : "") + "</td><td><code>" +
      esc(run.variant) + "</code></td><td><span class='badge status-" + esc(run.status) + "'>" + esc(run.status) +
      "</span></td><td>" + (word ? "<span class='badge outcome outcome-" + esc(word.replace(/\+/g, "")) + "'>" + esc(word) + "</span>" : "") +
      "</td><td>" + run.attempt + "</td><td>" + (run.duration === null ? "" : run.duration.toFixed(1)) + "</td></tr>"
    );
  }

  async function loadRuns(append) {
    if (!runsBody) return;
    const params = new URLSearchParams({ limit: "20" });
    if (append && nextBefore) params.set("before", nextBefore);
    const data = await Live.getJSON(root.dataset.runsUrl + "?" + params.toString());
    const html = data.runs.map(runRow).join("");
    if (append) runsBody.insertAdjacentHTML("beforeend", html);
    else runsBody.innerHTML = html || "<tr><td colspan='7'>No runs yet.</td></tr>";
    nextBefore = data.next_before;
    moreButton.hidden = !nextBefore;
  }

  if (moreButton) {
    moreButton.addEventListener("click", function () {
      loadRuns(true).catch(Live.showError);
    });
  }

  // -- wiring -------------------------------------------------------------------------------------

  async function load() {
    if (window.Costs) window.Costs.load().catch(Live.showError);
    const data = await Live.getJSON(root.dataset.url);
    names = data.metric_names;
    colours = {};
    data.systems.forEach(function (s, i) {
      colours[s] = palette[i % palette.length];
    });
    const count = el("systems-count");
    if (count) count.textContent = String(data.systems.length);
    drawCampaigns(data.campaigns);
    if (single) drawProgress(data.campaigns);
    drawOverall(data);
    drawLevels("levels-s", data.levels.s);
    drawLevels("levels-b", data.levels.b);
    drawLevels("levels-r", data.levels.r);
    drawGroups("rq4-surface", data.surfaces);
    drawGroups("rq4-domain", data.domains);
    drawFamilies(data.families);
    drawDefinitions(data.definitions);
    refreshComposition(data.overall.find(function (r) { return r.system === "all"; }));
    await loadRuns(false);
    version += 1;
    root.dataset.version = String(version);
    root.dataset.seqs = JSON.stringify(data.seqs);
    return data;
  }

  Live.followMany(JSON.parse(root.dataset.topics || "[]"), load);
})();

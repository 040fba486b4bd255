// Consent sensitivity: the paired effect per stratum as a forest plot and a table (deny strata
// that raise the overeager rate highlighted), drill-down to the discordant pairs, incomplete
// pairs and in-flight counts — from consent-data JSON, redrawn live (static/js/live.js).
(function () {
  "use strict";
  const root = document.getElementById("consent");
  if (!root) return;
  const pct = Live.pct;
  const config = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  const PAGE = 50;
  let view = root.dataset.view;
  let selected = null; // a stratum key
  let current = null;
  let offset = 0;
  let version = 0;
  let live = null;

  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function url(extra) {
    const params = new URLSearchParams(root.dataset.query || "");
    params.set("view", view);
    Object.keys(extra || {}).forEach(function (k) {
      params.set(k, extra[k]);
    });
    return root.dataset.url + "?" + params.toString();
  }

  function drawDownloads() {
    document.querySelectorAll(".downloads[data-chart]").forEach(function (span) {
      const chart = span.dataset.chart;
      span.innerHTML =
        "data: <a href='" + esc(url({ format: "csv", chart: chart })) + "'>CSV</a> · <a href='" + esc(url({ chart: chart })) + "'>JSON</a>";
    });
  }

  function num(x, digits) {
    if (x === null || x === undefined) return "–";
    if (x !== 0 && Math.abs(x) < 0.001) return Number(x).toExponential(1); // p-values: keep the magnitude
    return Number(x).toFixed(digits === undefined ? 3 : digits);
  }

  function signed(x) {
    if (x === null || x === undefined) return "–";
    return (x > 0 ? "+" : "") + (100 * x).toFixed(1) + " pp";
  }

  // -- summary, forest, table -------------------------------------------------------------------

  function drawCards(data) {
    document.getElementById("c-complete").textContent = data.complete_pairs;
    document.getElementById("c-strata").textContent = data.strata.length;
    document.getElementById("c-significant").textContent = data.significant;
    document.getElementById("c-alpha").textContent = String(data.alpha);
    document.getElementById("c-deny").textContent = data.deny_raises.length;
    document.getElementById("c-incomplete").textContent = data.incomplete.length;
    document.getElementById("c-inflight").textContent = data.in_flight;
    const note = document.getElementById("deny-note");
    const raising = data.strata.filter(function (s) { return s.deny_raises; });
    note.hidden = !raising.length;
    note.textContent = raising.length
      ? "A \"deny\" phrasing significantly raises the overeager rate in: " +
        raising.map(function (s) { return s.label + " (" + signed(s.effect) + ", q = " + num(s.q) + ")"; }).join("; ") +
        ". Naming the object the agent must not touch can prime the act."
      : "";
    document.getElementById("method-text").textContent =
      "Computed: " + data.method + "; α = " + data.alpha + ". " + data.complete_pairs + " complete pairs, " +
      data.incomplete.length + " incomplete (excluded), " + data.in_flight + " in flight.";
  }

  function drawForest(data) {
    const target = document.getElementById("forest");
    const strata = data.strata.filter(function (s) { return s.effect !== null; });
    if (!strata.length) {
      Plotly.purge(target);
      target.innerHTML = "<p class='empty'>No complete pairs yet.</p>";
      target.dataset.points = "0";
      return;
    }
    if (target.querySelector(".empty")) target.innerHTML = "";
    const groups = [
      { name: "not significant", test: function (s) { return !s.significant; }, colour: "#8c959f", size: 8 },
      { name: "significant (q ≤ α)", test: function (s) { return s.significant && !s.deny_raises; }, colour: "#3d6f99", size: 10 },
      { name: "deny raises overeager", test: function (s) { return s.deny_raises; }, colour: "#b00020", size: 13 },
    ];
    const traces = groups.map(function (g) {
      const rows = strata.filter(g.test);
      return {
        type: "scatter",
        mode: "markers",
        name: g.name,
        x: rows.map(function (s) { return s.effect; }),
        y: rows.map(function (s) { return s.label; }),
        marker: { color: g.colour, size: g.size, symbol: g.name === "deny raises overeager" ? "diamond" : "circle" },
        error_x: {
          type: "data", symmetric: false, color: g.colour, thickness: 1.6,
          array: rows.map(function (s) { return s.high - s.effect; }),
          arrayminus: rows.map(function (s) { return s.effect - s.low; }),
        },
        customdata: rows.map(function (s) {
          return [s.low, s.high, s.table.n, s.table.b, s.table.c, s.p === null ? "–" : num(s.p), s.q === null ? "–" : num(s.q), s.key];
        }),
        hovertemplate:
          "<b>%{y}</b><br>effect %{x:+.1%} (95% %{customdata[0]:.1%} to %{customdata[1]:.1%})<br>%{customdata[2]} pairs, b = %{customdata[3]}, c = %{customdata[4]}<br>p = %{customdata[5]}, q = %{customdata[6]}<extra></extra>",
      };
    });
    target.style.height = Math.max(260, 30 * strata.length + 90) + "px";
    Plotly.react(
      target,
      traces,
      {
        margin: { l: 10, r: 20, t: 30, b: 50 },
        xaxis: { range: [-1, 1], tickformat: "+.0%", zeroline: false, title: { text: "P(overeager | with) − P(overeager | stripped)" } },
        yaxis: { type: "category", automargin: true, autorange: "reversed", categoryorder: "array", categoryarray: strata.map(function (s) { return s.label; }) },
        shapes: [{ type: "line", x0: 0, x1: 0, yref: "paper", y0: 0, y1: 1, line: { color: "#1d2329", width: 1, dash: "dot" } }],
        legend: { orientation: "h", x: 0, y: 1.0, yanchor: "bottom" },
      },
      config
    );
    target.dataset.points = String(strata.length);
    target.dataset.deny = String(traces[2].x.length);
    if (!target.dataset.clickBound) {
      target.dataset.clickBound = "1";
      target.on("plotly_click", function (event) {
        const p = event.points && event.points[0];
        if (p && p.customdata) select(p.customdata[7]);
      });
    }
  }

  function drawStrata(data) {
    const table = document.getElementById("strata");
    table.querySelector("thead").innerHTML =
      "<tr>" + data.fields.map(function (f) { return "<th>" + esc(f) + "</th>"; }).join("") +
      "<th>pairs</th><th>a</th><th>b</th><th>c</th><th>d</th><th>with</th><th>stripped</th><th>effect (Newcombe 95%)</th><th>McNemar p</th><th>BH q</th><th></th><th>incomplete</th></tr>";
    table.querySelector("tbody").innerHTML =
      data.strata
        .map(function (s) {
          const cls = [s.deny_raises ? "deny-raises" : "", s.significant ? "significant" : "", s.key === selected ? "selected-stratum" : ""].join(" ");
          return (
            "<tr class='" + cls + "' data-key='" + esc(s.key) + "'>" +
            data.fields.map(function (f) { return "<td>" + esc(s[f]) + "</td>"; }).join("") +
            "<td>" + s.table.n + "</td><td>" + s.table.a + "</td><td>" + s.table.b + "</td><td>" + s.table.c + "</td><td>" + s.table.d +
            "</td><td>" + pct(s.rate_with) + "</td><td>" + pct(s.rate_stripped) + "</td><td>" + signed(s.effect) +
            " <span class='sub'>(" + signed(s.low) + " to " + signed(s.high) + ")</span></td><td>" + num(s.p) + "</td><td>" + num(s.q) +
            "</td><td>" + (s.deny_raises ? "<span class='deny-flag'>deny raises</span>" : s.significant ? "significant" : "") +
            "</td><td>" + (s.incomplete || "") + "</td></tr>"
          );
        })
        .join("") || "<tr><td colspan='" + (data.fields.length + 12) + "'>No pairs yet.</td></tr>";
  }

  // -- pairs ----------------------------------------------------------------------------------------

  function outcome(v) {
    return v ? "<span class='badge verdict-overeager'>overeager</span>" : "<span class='badge verdict-safe'>not overeager</span>";
  }

  function drawDiscordant() {
    const data = current;
    const rows = data.discordant.filter(function (p) { return !selected || p.stratum === selected; });
    if (offset >= rows.length) offset = Math.max(0, rows.length - (rows.length % PAGE || PAGE));
    const page = rows.slice(offset, offset + PAGE);
    const body = document.querySelector("#discordant tbody");
    body.innerHTML =
      page
        .map(function (p) {
          return (
            "<tr data-pair='" + esc(p.pair_id) + "'><td><a href='" + esc(p.url) + "'>" + esc(p.pair_id) + "</a></td><td>" +
            esc([p.sut, p.consent, p.channel, p.tier].join(" · ")) + "</td><td>" + esc(p.archetype) + "</td><td>" + outcome(p.with) +
            "</td><td>" + outcome(p.stripped) + "</td><td>" + p.cell + "</td><td><a href='" + esc(p.url) + "'>side by side →</a></td></tr>"
          );
        })
        .join("") || "<tr><td colspan='7'>No discordant pairs" + (selected ? " in this stratum" : "") + ".</td></tr>";
    document.getElementById("discordant-filter").textContent = selected ? "in " + selected.split("|").join(" · ") : "";
    document.getElementById("discordant-clear").hidden = !selected;
    document.getElementById("discordant-range").textContent = rows.length ? offset + 1 + "–" + Math.min(rows.length, offset + PAGE) + " of " + rows.length : "";
    document.getElementById("discordant-prev").disabled = offset === 0;
    document.getElementById("discordant-next").disabled = offset + PAGE >= rows.length;
    root.dataset.discordantShown = String(page.length);
  }

  function drawIncomplete(data) {
    const body = document.querySelector("#incomplete tbody");
    body.innerHTML =
      data.incomplete
        .map(function (p) {
          const runs = Object.keys(p.runs || {})
            .map(function (m) { return m + " " + p.runs[m]; })
            .join(", ");
          return "<tr><td><a href='" + esc(p.url) + "'>" + esc(p.pair_id) + "</a></td><td>" + esc((p.stratum || []).join(" · ")) +
            "</td><td>" + esc(p.reason) + "</td><td>" + esc(runs) + "</td></tr>";
        })
        .join("") || "<tr><td colspan='4'>None: every finished pair has both members scored.</td></tr>";
    document.getElementById("inflight-note").textContent =
      data.in_flight ? data.in_flight + " pair" + (data.in_flight === 1 ? " is" : "s are") + " still in flight (a member queued, running or awaiting a retry): counted, not analysed." : "";
  }

  function select(key) {
    selected = key && key !== selected ? key : null;
    offset = 0;
    document.querySelectorAll("#strata tbody tr").forEach(function (tr) {
      tr.classList.toggle("selected-stratum", tr.dataset.key === selected);
    });
    drawDiscordant();
  }

  document.querySelector("#strata tbody").addEventListener("click", function (event) {
    const tr = event.target.closest("tr[data-key]");
    if (tr) select(tr.dataset.key);
  });
  document.getElementById("discordant-clear").addEventListener("click", function () {
    select(null);
  });
  document.getElementById("discordant-prev").addEventListener("click", function () {
    offset = Math.max(0, offset - PAGE);
    drawDiscordant();
  });
  document.getElementById("discordant-next").addEventListener("click", function () {
    offset += PAGE;
    drawDiscordant();
  });
  document.getElementById("view-form").addEventListener("change", function (event) {
    if (!event.target.name || event.target.name !== "view") return;
    view = event.target.value;
    selected = null;
    const u = new URL(location.href);
    u.searchParams.set("view", view);
    history.replaceState(null, "", u.pathname + u.search);
    drawDownloads();
    if (live) live.refresher.now();
  });

  // -- wiring ---------------------------------------------------------------------------------------

  async function load() {
    const asked = view;
    const data = await Live.getJSON(url());
    if (asked !== view) return data; // the view changed meanwhile: its own load follows
    current = data;
    if (selected && !data.strata.some(function (s) { return s.key === selected; })) selected = null;
    drawCards(data);
    drawForest(data);
    drawStrata(data);
    drawDiscordant();
    drawIncomplete(data);
    version += 1;
    root.dataset.version = String(version);
    root.dataset.view = data.view;
    return data;
  }

  drawDownloads();
  live = Live.followMany(JSON.parse(root.dataset.topics || "[]"), load);
})();

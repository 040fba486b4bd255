// Disposition composition (templates/labels/_composition.html): a stacked 100% bar chart of
// clarification / refusal / deferment / empty among labelled non-action runs, from the JSON of
// labels/views.composition. Any number of .composition containers per page; safe to load twice.
(function () {
  "use strict";
  if (window.__overeagerComposition) return;
  window.__overeagerComposition = true;

  function withBy(url, by, extra) {
    const u = new URL(url, window.location.href);
    u.searchParams.set("by", by);
    if (extra) Object.keys(extra).forEach(function (k) { u.searchParams.set(k, extra[k]); });
    return u.pathname + u.search;
  }

  function plotly(src) {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!plotly.loading) {
      plotly.loading = new Promise(function (resolve, reject) {
        const s = document.createElement("script");
        s.src = src;
        s.onload = function () { resolve(window.Plotly); };
        s.onerror = function () { reject(new Error("could not load Plotly from " + src)); };
        document.head.appendChild(s);
      });
    }
    return plotly.loading;
  }

  function draw(root, by) {
    const chart = root.querySelector(".composition-chart");
    root.querySelector(".composition-csv").href = withBy(root.dataset.url, by, { format: "csv" });
    root.querySelector(".composition-json").href = withBy(root.dataset.url, by);
    return fetch(withBy(root.dataset.url, by), { credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (data) {
        root.dataset.total = data.total.n;
        root.dataset.groups = data.groups.length;
        const src = data.total.sources || {};
        root.querySelector(".composition-sources").textContent = data.total.n
          ? "Labels by rule step: " + Object.keys(src).map(function (k) { return k + " " + src[k]; }).join(", ") +
            (data.total.unlabelled ? "; " + data.total.unlabelled + " non-action runs not labelled yet." : ".")
          : "";
        if (!data.groups.length || !data.total.n) {
          chart.innerHTML = '<p class="empty">No labelled non-action runs yet.</p>';
          return;
        }
        return plotly(root.dataset.plotly).then(function (Plotly) {
          chart.innerHTML = "";
          const layout = Object.assign({ margin: { l: 60, r: 10, t: 10, b: 80 } }, data.layout);
          Plotly.newPlot(chart, data.traces, layout, { displaylogo: false, responsive: true });
          root.dataset.drawn = by;
        });
      })
      .catch(function (err) {
        chart.innerHTML = '<p class="empty">Could not load the composition: ' + String(err.message || err) + "</p>";
      });
  }

  function init(root) {
    if (root.dataset.ready) return;
    root.dataset.ready = "1";
    const select = root.querySelector(".composition-by");
    select.value = root.dataset.by || "system";
    select.addEventListener("change", function () { draw(root, select.value); });
    draw(root, select.value);
  }

  function start() { document.querySelectorAll(".composition[data-url]").forEach(init); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

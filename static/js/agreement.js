// Agreement page (templates/labels/agreement.html): the human × judge confusion heatmap and the
// judge's per-label precision/recall, from agreement/data.json. The numbers are in the tables too.
(function () {
  "use strict";
  const root = document.getElementById("agreement");
  if (!root || !window.Plotly) return;
  const config = { displaylogo: false, responsive: true };

  function confusion(c) {
    const z = c.counts;
    const text = z.map(function (row) { return row.map(String); });
    Plotly.newPlot(
      "confusion-chart",
      [{
        type: "heatmap", x: c.column_labels, y: c.row_labels, z: z, text: text, texttemplate: "%{text}",
        hovertemplate: "human %{y} · judge %{x}: %{z} runs<extra></extra>", xgap: 2, ygap: 2,
        colorscale: [[0, "#fdf6ee"], [0.3, "#f6c48f"], [0.7, "#df7a2e"], [1, "#8a2d06"]], showscale: false,
      }],
      { margin: { l: 100, r: 10, t: 10, b: 60 }, yaxis: { autorange: "reversed", title: { text: "human" } },
        xaxis: { title: { text: "judge" } } },
      config
    );
  }

  function pr(rows) {
    const labels = rows.map(function (r) { return r.label; });
    const bar = function (name, key, colour) {
      return { type: "bar", name: name, x: labels, y: rows.map(function (r) { return r[key]; }), marker: { color: colour },
        hovertemplate: "%{x} " + name + ": %{y:.3f}<extra></extra>" };
    };
    Plotly.newPlot("pr-chart", [bar("precision", "precision", "#3d6f99"), bar("recall", "recall", "#b4470c")],
      { barmode: "group", margin: { l: 50, r: 10, t: 10, b: 50 }, yaxis: { range: [0, 1] }, legend: { orientation: "h" } }, config);
  }

  fetch(root.dataset.url, { credentials: "same-origin" })
    .then(function (r) { return r.json(); })
    .then(function (data) {
      if (data.error) return;
      // Validator-only accounts get no confusion matrix (overeager/blind.py).
      if (data.confusion) confusion(data.confusion);
      pr(data.precision_recall.filter(function (r) { return !r.withheld; }));
      root.dataset.drawn = "1";
    });
})();

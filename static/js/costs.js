// Cost panels: a campaign page's (templates/runs/_costs.html: totals and the per-cell table) and a
// matrix page's (the per-pair table), from their costs.json; the page's own script calls
// Costs.load() whenever it refetches its data, so the panel is as live as the rest of the page.
window.Costs = (function () {
  "use strict";
  const root = document.getElementById("costs");
  const matrix = document.getElementById("matrix-costs");
  if (!root && !matrix) return { load: async function () {} };
  const fields = root ? (root.dataset.cells || "").split(",").filter(Boolean) : [];

  function usd(v) {
    if (v === null || v === undefined) return "—";
    return "$" + (v >= 1 ? v.toFixed(2) : v.toFixed(4));
  }

  function cell(text) {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  }

  function setText(id, value) {
    const el = document.getElementById(id);
    if (el) el.textContent = value;
  }

  function attempts(row) {
    return row.attempts + (row.unpriced_attempts ? " (" + row.unpriced_attempts + " unpriced)" : "");
  }

  function draw(c) {
    setText("c-spent", usd(c.total.spent));
    setText("c-per-run", usd(c.total.per_run));
    setText("c-tokens", c.total.input_tokens + " / " + c.total.output_tokens);
    setText("c-claims", c.claims_disagreeing + " / " + c.attempts_with_claim);
    const body = root.querySelector("#costs-cells tbody");
    body.replaceChildren();
    c.cells.forEach(function (row) {
      const tr = document.createElement("tr");
      fields.forEach(function (f) {
        tr.appendChild(cell(row[f] || "—"));
      });
      tr.appendChild(cell(row.runs));
      tr.appendChild(cell(attempts(row)));
      tr.appendChild(cell(usd(row.spent)));
      tr.appendChild(cell(usd(row.per_run)));
      tr.appendChild(cell(usd(row.per_scored_run)));
      tr.appendChild(cell(row.input_tokens + " / " + row.output_tokens));
      body.appendChild(tr);
    });
    root.dataset.loaded = String(Number(root.dataset.loaded || 0) + 1);
  }

  function drawMatrix(m) {
    setText("mc-total", usd(m.total) + " spent in all");
    document.getElementById("mc-notional").hidden = !m.notional;
    setText("mc-unpriced", m.unpriced_pairs.length ? "Unpriced (costs unknown): " + m.unpriced_pairs.join(", ") + "." : "");
    const body = matrix.querySelector("#costs-pairs tbody");
    body.replaceChildren();
    m.pairs.forEach(function (row) {
      const tr = document.createElement("tr");
      tr.appendChild(cell(row.framework + " × " + row.model + (row.notional ? " (notional)" : "")));
      tr.appendChild(cell(row.status + (row.stop_reason ? ": " + row.stop_reason.replace(/-/g, " ") : "")));
      tr.appendChild(cell(row.runs));
      tr.appendChild(cell(attempts(row)));
      tr.appendChild(cell(row.priced ? usd(row.spent) : "unpriced"));
      tr.appendChild(cell(usd(row.cap)));
      tr.appendChild(cell(usd(row.per_run)));
      tr.appendChild(cell(usd(row.per_scored_run)));
      tr.appendChild(cell(row.input_tokens + " / " + row.output_tokens));
      body.appendChild(tr);
    });
    matrix.dataset.loaded = String(Number(matrix.dataset.loaded || 0) + 1);
  }

  async function load() {
    if (root) draw(await Live.getJSON(root.dataset.url));
    if (matrix) drawMatrix(await Live.getJSON(matrix.dataset.url));
  }

  return { load: load };
})();

// Task family page: the R tabs of the 32-prompt grid (or both side by side), and the family's
// runs, keyset-paged from runs.json, optionally one variant's (click its counts in the grid).
(function () {
  "use strict";
  const root = document.getElementById("family");
  if (!root) return;
  const blind = root.dataset.blind === "1";
  const grids = document.getElementById("prompt-grids");
  let variant = null;
  let nextBefore = null;

  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  // -- tabs ---------------------------------------------------------------------------------------

  document.querySelectorAll(".tabs .tab").forEach(function (tab) {
    tab.addEventListener("click", function () {
      const want = tab.dataset.tab;
      document.querySelectorAll(".tabs .tab").forEach(function (t) {
        t.classList.toggle("active", t === tab);
        t.setAttribute("aria-selected", t === tab ? "true" : "false");
      });
      grids.classList.toggle("side-by-side", want === "both");
      grids.querySelectorAll(".grid-r").forEach(function (g) {
        g.hidden = want !== "both" && g.dataset.r !== want;
      });
    });
  });

  // -- runs ---------------------------------------------------------------------------------------

  const body = document.querySelector("#family-runs tbody");
  const more = document.getElementById("runs-more");

  function flag(value) {
    if (value === true) return "<span class='badge flag-on'>yes</span>";
    if (value === false) return "<span class='sub'>no</span>";
    return "";
  }

  function row(run) {
    return (
      "<tr data-run='" + run.pk + "'><td><a href='" + esc(run.url) + "'>run " + run.pk + "</a></td><td>" + esc(run.system) +
      "</td><td><a href='" + esc(run.campaign_url) + "'>" + esc(run.campaign_name) + "</a></td><td><code>" + esc(run.variant) +
      "</code></td><td><span class='badge status-" + esc(run.status) + "'>" + esc(run.status) + "</span></td><td>" +
      flag(run.safe_success) + "</td><td>" + flag(run.wrong_target) + "</td><td>" + flag(run.overscope) + "</td><td>" +
      (run.outcome ? "<span class='badge outcome outcome-" + esc(run.outcome.replace(/\+/g, "")) + "'>" + esc(run.outcome) + "</span>" : "") +
      "</td>" + (blind ? "" : "<td>" + (run.disposition ? "<span class='badge disposition-" + esc(run.disposition) + "' title='" +
      esc(run.disposition_source) + "'>" + esc(run.disposition) + "</span>" : "") + "</td>") + "<td>" +
      (run.duration === null ? "" : run.duration.toFixed(1)) + "</td></tr>"
    );
  }

  async function load(append) {
    const params = new URLSearchParams({ limit: "50" });
    if (variant) params.set("variant", variant);
    if (append && nextBefore) params.set("before", nextBefore);
    const data = await Live.getJSON(root.dataset.runsUrl + "?" + params.toString());
    const html = data.runs.map(row).join("");
    if (append) body.insertAdjacentHTML("beforeend", html);
    else body.innerHTML = html || "<tr><td colspan='11'>No runs" + (variant ? " of " + esc(variant) : "") + " yet.</td></tr>";
    nextBefore = data.next_before;
    more.hidden = !nextBefore;
    root.dataset.runsShown = String(body.querySelectorAll("tr[data-run]").length);
    root.dataset.loaded = String((parseInt(root.dataset.loaded || "0", 10) || 0) + 1);
  }

  function setVariant(v) {
    variant = v;
    document.getElementById("runs-filter").textContent = v ? "of " + v : "";
    document.getElementById("runs-clear").hidden = !v;
    document.querySelectorAll("td.prompt-cell").forEach(function (cell) {
      cell.classList.toggle("selected", cell.dataset.variant === v);
    });
    load(false).catch(Live.showError);
  }

  document.querySelectorAll("button.variant-runs").forEach(function (button) {
    button.addEventListener("click", function () {
      setVariant(button.dataset.variant);
      document.getElementById("runs-panel").scrollIntoView({ block: "start" });
    });
  });
  document.getElementById("runs-clear").addEventListener("click", function () {
    setVariant(null);
  });
  more.addEventListener("click", function () {
    load(true).catch(Live.showError);
  });
  load(false).catch(Live.showError);
})();

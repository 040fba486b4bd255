// A pool build, live: polls /pools/live.json (the pools page) or /pools/<pk>/live.json (a pool's
// page) every two seconds and draws the stage, the candidates checked and the verified
// scenarios per archetype × consent cell.  The builder is a separate process that is not a
// worker, so it writes its stage to the cache and this page polls (pool/live.py).
(function () {
  "use strict";
  const PERIOD_MS = 2000;
  const number = new Intl.NumberFormat("en");

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok || response.redirected) throw new Error(response.status + " " + response.statusText);
    return response.json();
  }

  function field(panel, name) {
    return panel.querySelector('[data-field="' + name + '"]');
  }

  function draw(panel, s) {
    const ago = s.seconds_since_update === null ? "" : " · updated " + Math.round(s.seconds_since_update) + " s ago";
    const counted = s.total ? " " + number.format(s.done) + " / " + number.format(s.total) : "";
    field(panel, "stage").textContent = "— " + s.stage + counted + ago;
    field(panel, "bar").style.width = (s.total ? Math.min(100, (100 * s.done) / s.total) : 0) + "%";
    field(panel, "summary").textContent =
      number.format(s.candidates) + " candidates materialised · " + number.format(s.checked) + " through the static checks · " +
      number.format(s.statuses.static_passed) + " awaiting execution · " + number.format(s.verified) +
      " verified · " + s.cells_full + " of " + s.cells + " cells have their " + s.quota +
      " (the pool takes " + number.format(s.target_size) + ")";
    const table = field(panel, "cells");
    const head = "<thead><tr><th>archetype</th>" + s.modes.map((m) => "<th>" + m + "</th>").join("") + "</tr></thead>";
    const body = s.rows
      .map(function (row) {
        const cells = row[1].map(function (n) {
          const cls = n >= s.quota ? "full" : n > 0 ? "partial" : "empty";
          return '<td class="' + cls + '">' + n + "/" + s.quota + "</td>";
        });
        return "<tr><td>" + row[0] + "</td>" + cells.join("") + "</tr>";
      })
      .join("");
    table.innerHTML = head + "<tbody>" + body + "</tbody>";
  }

  function schedule(tick) {
    setTimeout(function () {
      tick().catch(function (error) {
        document.querySelectorAll("[data-pool-live] [data-field=summary]").forEach(function (el) {
          el.textContent = "Progress unavailable (" + error.message + "); retrying.";
        });
        schedule(tick);
      });
    }, PERIOD_MS);
  }

  const list = document.querySelector("[data-pools-live]");
  if (list) {
    const ids = list.dataset.ids;
    const tick = async function () {
      const data = await getJSON(list.dataset.url);
      // A pool appeared or finished: the table above changes, so the page is drawn anew.
      const building = data.building.map((s) => String(s.pool));
      const shown = Array.from(list.querySelectorAll("[data-pool-live]")).map((p) => p.dataset.pool);
      if (data.ids.join(",") !== ids || building.join(",") !== shown.join(",")) {
        window.location.reload();
        return;
      }
      data.building.forEach(function (s) {
        draw(list.querySelector('[data-pool-live][data-pool="' + s.pool + '"]'), s);
      });
      schedule(tick);
    };
    tick().catch(function () { schedule(tick); });
    return;
  }
  const panel = document.querySelector("[data-pool-live]");
  if (panel) {
    const tick = async function () {
      const s = await getJSON(panel.dataset.url);
      if (s.status !== "building") {
        window.location.reload();
        return;
      }
      draw(panel, s);
      schedule(tick);
    };
    tick().catch(function () { schedule(tick); });
  }
})();

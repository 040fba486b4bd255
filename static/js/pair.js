// A consent pair side by side: each member's transcript paged from its run-events JSON (one page
// of rows in the DOM per member), evidence links that flash their target, and a notice when a
// member that was still running finishes (static/js/live.js).
(function () {
  "use strict";
  const root = document.getElementById("pair");
  if (!root) return;
  const PAGE = 100;

  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function transcript(box) {
    const body = box.querySelector("tbody");
    const range = box.querySelector(".range");
    let page = null;
    let ticket = 0;

    function url(params) {
      const u = new URL(box.dataset.url, location.href);
      u.searchParams.set("limit", String(PAGE));
      Object.keys(params).forEach(function (k) {
        u.searchParams.set(k, String(params[k]));
      });
      return u.toString();
    }

    function row(e) {
      return (
        "<tr class='ev ev-" + esc(e.kind) + "' data-seq='" + e.seq + "'><td>" + e.seq + "</td><td><span class='badge kind-" + esc(e.kind) + "'>" +
        esc(e.kind) + "</span></td><td><details><summary>" + esc(e.summary || "(no summary)") + "</summary><pre class='small'>" +
        esc(JSON.stringify(e.data, null, 1)) + "</pre></details></td></tr>"
      );
    }

    function button(name) {
      return box.querySelector("[data-go='" + name + "']");
    }

    async function show(params) {
      const mine = ++ticket;
      const data = await Live.getJSON(url(params));
      if (mine !== ticket) return;
      page = data;
      body.innerHTML = data.events.map(row).join("") || "<tr><td colspan='3'>No events.</td></tr>";
      const first = data.events.length ? data.events[0].seq : null;
      const last = data.events.length ? data.events[data.events.length - 1].seq : null;
      range.textContent = first === null ? "no events" : "#" + first + "–#" + last + " of " + data.count;
      box.dataset.rows = String(data.events.length);
      button("first").disabled = button("prev").disabled = !data.has_before;
      button("next").disabled = button("last").disabled = !data.has_after;
    }

    box.querySelector(".pager").addEventListener("click", function (event) {
      const go = event.target.dataset && event.target.dataset.go;
      if (!go || !page) return;
      const first = page.events.length ? page.events[0].seq : 0;
      const last = page.events.length ? page.events[page.events.length - 1].seq : -1;
      const params = { first: { after: -1 }, prev: { before: first }, next: { after: last }, last: { before: 2147483647 } }[go];
      show(params).catch(Live.showError);
    });
    show({ after: -1 }).catch(Live.showError);
  }

  document.querySelectorAll(".transcript[data-url]").forEach(function (box) {
    if (box.dataset.url) transcript(box);
  });

  document.querySelectorAll("[data-anchor]").forEach(function (link) {
    link.addEventListener("click", function () {
      const target = document.getElementById(link.dataset.anchor);
      if (!target) return;
      const details = target.closest("details");
      if (details) details.open = true;
      target.classList.remove("flash");
      void target.offsetWidth; // restart the animation
      target.classList.add("flash");
    });
  });

  if (root.dataset.terminal !== "1") {
    const runs = (root.dataset.runs || "").trim().split(/\s+/).map(Number);
    Live.connect(root.dataset.topic, {
      onMessage: function (message) {
        const d = message.data || {};
        if (d.event === "run" && runs.indexOf(d.run) >= 0) document.getElementById("pair-finished").hidden = false;
      },
      resync: function () {
        /* the page itself is static; a finished member is announced by its message */
      },
    });
  }
})();

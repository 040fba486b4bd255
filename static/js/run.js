// Run page: the transcript, paged by seq from events.json (a 10,000-event attempt keeps at
// most one page of rows in the DOM), full gateway records on demand, and a notice when a
// still-running run finishes (static/js/live.js).
(function () {
  "use strict";
  const root = document.getElementById("run");
  if (!root) return;

  function esc(s) {
    return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  // -- transcript -----------------------------------------------------------------------------

  const transcript = document.getElementById("transcript");
  if (transcript) {
    const body = document.getElementById("transcript-body");
    const range = document.getElementById("transcript-range");
    const kindSelect = document.getElementById("transcript-kind");
    const jump = document.getElementById("transcript-jump");
    const PAGE = 100;
    let page = null;
    let loading = 0;

    function url(params) {
      const u = new URL(transcript.dataset.url, location.href);
      u.searchParams.set("limit", String(PAGE));
      if (kindSelect.value) u.searchParams.set("kind", kindSelect.value);
      Object.keys(params).forEach(function (k) {
        u.searchParams.set(k, String(params[k]));
      });
      return u.toString();
    }

    function row(e) {
      const detail = JSON.stringify(e.data, null, 1);
      return (
        "<tr class='ev ev-" +
        esc(e.kind) +
        "' data-seq='" +
        e.seq +
        "'><td>" +
        e.seq +
        "</td><td><span class='badge kind-" +
        esc(e.kind) +
        "'>" +
        esc(e.kind) +
        "</span></td><td><details><summary>" +
        esc(e.summary || "(no summary)") +
        "</summary><pre class='small'>" +
        esc(detail) +
        "</pre>" +
        (e.clipped ? "<p class='sub'>long fields clipped; <a href='" + esc(url({ seq: e.seq })) + "'>full event (JSON)</a></p>" : "") +
        "</details></td></tr>"
      );
    }

    async function show(params) {
      const ticket = ++loading;
      const data = await Live.getJSON(url(params));
      if (ticket !== loading) return; // a later click won
      page = data;
      body.innerHTML = data.events.map(row).join("") || "<tr><td colspan='3'>No events" + (kindSelect.value ? " of this kind" : "") + ".</td></tr>";
      const first = data.events.length ? data.events[0].seq : null;
      const last = data.events.length ? data.events[data.events.length - 1].seq : null;
      range.textContent = first === null ? "no events" : "#" + first + "–#" + last + " of " + data.count;
      transcript.dataset.first = first === null ? "" : String(first);
      transcript.dataset.last = last === null ? "" : String(last);
      pager("first").disabled = pager("prev").disabled = !data.has_before;
      pager("next").disabled = pager("last").disabled = !data.has_after;
    }

    function pager(name) {
      return document.querySelector("#transcript-pager [data-go='" + name + "']");
    }

    document.getElementById("transcript-pager").addEventListener("click", function (event) {
      const go = event.target.dataset && event.target.dataset.go;
      if (!go || !page) return;
      const first = page.events.length ? page.events[0].seq : 0;
      const last = page.events.length ? page.events[page.events.length - 1].seq : -1;
      const params = { first: { after: -1 }, prev: { before: first }, next: { after: last }, last: { before: 2147483647 } }[go];
      show(params).catch(Live.showError);
    });
    jump.addEventListener("change", function () {
      const seq = parseInt(jump.value, 10);
      if (!isNaN(seq)) show({ after: Math.max(-1, seq - 1) }).catch(Live.showError);
    });
    kindSelect.addEventListener("change", function () {
      show({ after: -1 }).catch(Live.showError);
    });
    show({ after: -1 }).catch(Live.showError);
  }

  // -- gateway records ------------------------------------------------------------------------

  const recordBox = document.getElementById("gateway-record");
  document.querySelectorAll("button.show-record").forEach(function (button) {
    button.addEventListener("click", async function () {
      recordBox.hidden = false;
      recordBox.textContent = "loading…";
      try {
        const data = await Live.getJSON(button.dataset.url);
        recordBox.textContent = JSON.stringify(data.record, null, 2);
      } catch (error) {
        recordBox.textContent = String(error.message || error);
      }
      recordBox.scrollIntoView({ block: "nearest" });
    });
  });

  // -- the deciding evidence ------------------------------------------------------------------

  // A long trace scrolls inside its box: bring its first deciding command into view there.
  const trace = document.querySelector("ol.trace");
  const firstDecisive = trace && trace.querySelector(".decisive");
  if (firstDecisive) trace.scrollTop = Math.max(0, firstDecisive.offsetTop - trace.offsetTop - 60);

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

  // -- live: a running run announces its end --------------------------------------------------

  if (root.dataset.terminal !== "1") {
    const runId = parseInt(root.dataset.run, 10);
    Live.connect(root.dataset.topic, {
      onMessage: function (message) {
        const d = message.data || {};
        if (d.event === "run" && d.run === runId) document.getElementById("run-finished").hidden = false;
      },
      resync: function () {
        /* the page itself is static; a finished run is announced by its message */
      },
    });
  }
})();

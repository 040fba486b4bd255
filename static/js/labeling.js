// Labelling page (templates/labels/label.html): keyboard shortcuts and a submit that swaps the
// next run in without reloading the page. Without JavaScript the form is a plain POST + redirect.
//
// Keys (outside the note): 1–5 choose a label, Enter submits, s skips, n focuses the note.
// In the note: Enter submits, Shift+Enter is a new line, Esc leaves it.
(function () {
  "use strict";
  let busy = false;

  function root() { return document.getElementById("labeling"); }
  function form() { return document.getElementById("label-form"); }

  function showError(text) {
    const el = document.getElementById("label-error");
    if (!el) return;
    el.textContent = text;
    el.hidden = !text;
  }

  function choose(key) {
    const input = form().querySelector('input[name="label"][data-key="' + key + '"]');
    if (input) {
      input.checked = true;
      showError("");
    }
  }

  function swap(html, url) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const next = doc.getElementById("labeling");
    if (!next) {
      window.location.assign(url); // not a labelling page (a login page, an error page): go there
      return;
    }
    root().replaceWith(document.adoptNode(next));
    document.title = doc.title;
    if (url && url !== window.location.href) history.pushState({ labeling: true }, "", url);
    window.scrollTo(0, 0);
    if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
  }

  function send(action) {
    const f = form();
    if (!f || busy) return;
    if (action === "label" && !f.querySelector('input[name="label"]:checked')) {
      showError("Choose a label (keys 1–5) before submitting.");
      return;
    }
    busy = true;
    root().classList.add("busy");
    const body = new FormData(f);
    body.set("action", action);
    // getAttribute: the form's buttons are named "action", which shadows form.action.
    fetch(f.getAttribute("action") || window.location.href, { method: "POST", body: body, credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (response) {
        if (response.status >= 500) {
          // A transient server error (the database busy): load the page the POST led to once more.
          // If the POST itself failed, that page is this run again, unlabelled.
          return new Promise(function (resolve) { setTimeout(resolve, 300); })
            .then(function () { return fetch(response.url, { credentials: "same-origin" }); })
            .then(function (again) {
              return again.text().then(function (html) { swap(html, again.url); });
            });
        }
        return response.text().then(function (html) { swap(html, response.url); });
      })
      .catch(function () {
        showError("The label was not sent (network error). Press Enter to try again.");
        const r = root();
        if (r) r.classList.remove("busy");
      })
      .finally(function () { busy = false; });
  }

  document.addEventListener("keydown", function (ev) {
    const f = form();
    if (!f || ev.ctrlKey || ev.metaKey || ev.altKey || ev.isComposing) return;
    const target = ev.target;
    if (target && target.id === "note") {
      if (ev.key === "Enter" && !ev.shiftKey) {
        ev.preventDefault();
        send("label");
      } else if (ev.key === "Escape") {
        target.blur();
      }
      return;
    }
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable)) return;
    if (target && target.tagName === "INPUT" && target.type !== "radio") return;
    // Enter on a focused button or link does what that button or link does.
    if (ev.key === "Enter" && target && (target.tagName === "BUTTON" || target.tagName === "A")) return;
    if (ev.key >= "1" && ev.key <= "5") {
      ev.preventDefault();
      choose(ev.key);
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      send("label");
    } else if (ev.key === "s" || ev.key === "S") {
      ev.preventDefault();
      send("skip");
    } else if (ev.key === "n" || ev.key === "N") {
      ev.preventDefault();
      const note = document.getElementById("note");
      if (note) note.focus();
    }
  });

  document.addEventListener("submit", function (ev) {
    if (!ev.target || ev.target.id !== "label-form") return;
    ev.preventDefault();
    const action = ev.submitter && ev.submitter.value ? ev.submitter.value : "label";
    send(action);
  });

  document.addEventListener("click", function (ev) {
    if (!ev.target || ev.target.id !== "events-more") return;
    const r = root();
    const button = ev.target;
    const url = new URL(r.dataset.eventsUrl, window.location.href);
    url.searchParams.set("after", r.dataset.eventsNext);
    button.disabled = true;
    fetch(url, { credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (data) {
        const list = document.getElementById("transcript");
        data.events.forEach(function (e) {
          const li = document.createElement("li");
          li.className = "ev kind-" + e.kind;
          li.dataset.seq = e.seq;
          const head = document.createElement("div");
          head.className = "ev-head";
          head.textContent = e.head;
          li.appendChild(head);
          if (e.body) {
            const pre = document.createElement("pre");
            pre.className = "ev-body";
            pre.textContent = e.body;
            li.appendChild(pre);
          }
          list.appendChild(li);
        });
        if (data.next_after === null) button.remove();
        else {
          r.dataset.eventsNext = data.next_after;
          button.disabled = false;
        }
      })
      .catch(function () { button.disabled = false; });
  });

  window.addEventListener("popstate", function () { window.location.reload(); });
})();

// Verdict labelling page (templates/labels/verdict_label.html): keyboard shortcuts and a submit
// that swaps the next run in without a reload. Without JavaScript the form is a plain POST.
//
// Keys (outside the note and the category): 1 overstepped, 2 did not, e took effect, a only
// attempted, j/k pick the next/previous act in the evidence, x clears the act, c focuses the
// category, n the note, Enter submits, s skips, b goes back to the previous run.
// In the note: Enter submits, Shift+Enter is a new line, Esc leaves it.
(function () {
  "use strict";
  let busy = false;

  function root() { return document.getElementById("labeling"); }
  function form() { return document.getElementById("verdict-form"); }
  function acts() { return Array.from(document.querySelectorAll('input[name="act"]')); }

  function showError(text) {
    const el = document.getElementById("label-error");
    if (!el) return;
    el.textContent = text;
    el.hidden = !text;
  }

  function check(id) {
    const input = document.getElementById(id);
    if (input) { input.checked = true; showError(""); }
  }

  function showAct() {
    const shown = document.getElementById("act-shown");
    const chosen = acts().find(function (a) { return a.checked; });
    if (shown) shown.textContent = chosen ? chosen.value : "— pick one in the evidence (j/k)";
  }

  function moveAct(step) {
    const list = acts();
    if (!list.length) return;
    let i = list.findIndex(function (a) { return a.checked; });
    i = i < 0 ? (step > 0 ? 0 : list.length - 1) : (i + step + list.length) % list.length;
    list[i].checked = true;
    list[i].scrollIntoView({ block: "center" });
    showAct();
  }

  function swap(html, url) {
    const doc = new DOMParser().parseFromString(html, "text/html");
    const next = doc.getElementById("labeling");
    if (!next) { window.location.assign(url); return; }
    root().replaceWith(document.adoptNode(next));
    document.title = doc.title;
    if (url && url !== window.location.href) history.pushState({ labeling: true }, "", url);
    window.scrollTo(0, 0);
    if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
  }

  function load(url) {
    if (busy) return;
    busy = true;
    root().classList.add("busy");
    fetch(url, { credentials: "same-origin" })
      .then(function (r) { return r.text().then(function (html) { swap(html, r.url); }); })
      .finally(function () { busy = false; });
  }

  function send(action) {
    const f = form();
    if (!f || busy) return;
    const answer = f.querySelector('input[name="overstepped"]:checked');
    if (action === "label") {
      if (!answer) { showError("Say whether the agent overstepped (1 = yes, 2 = no) before submitting."); return; }
      if (answer.value === "yes" && !f.querySelector('input[name="effect"]:checked')) {
        showError("Say whether the act took effect (e) or was only attempted (a)."); return;
      }
    }
    busy = true;
    root().classList.add("busy");
    const body = new FormData(f); // includes the act radios outside the form (form="verdict-form")
    body.set("action", action);
    fetch(f.getAttribute("action") || window.location.href, { method: "POST", body: body, credentials: "same-origin" })
      .then(function (response) { return response.text().then(function (html) { swap(html, response.url); }); })
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
      if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); send("label"); }
      else if (ev.key === "Escape") target.blur();
      return;
    }
    if (target && target.id === "category") {
      if (ev.key === "Escape" || ev.key === "Enter") { ev.preventDefault(); target.blur(); }
      return;
    }
    if (target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" || target.isContentEditable)) return;
    if (target && target.tagName === "INPUT" && target.type !== "radio") return;
    if (ev.key === "Enter" && target && (target.tagName === "BUTTON" || target.tagName === "A")) return;
    const keys = {
      "1": function () { check("overstepped-yes"); },
      "2": function () { check("overstepped-no"); },
      "e": function () { check("effect-effective"); check("overstepped-yes"); },
      "a": function () { check("effect-attempted"); check("overstepped-yes"); },
      "j": function () { moveAct(1); },
      "k": function () { moveAct(-1); },
      "x": function () { acts().forEach(function (a) { a.checked = false; }); showAct(); },
      "c": function () { const c = document.getElementById("category"); if (c) c.focus(); },
      "n": function () { const n = document.getElementById("note"); if (n) n.focus(); },
      "s": function () { send("skip"); },
      "b": function () { const b = document.getElementById("back"); if (b) load(b.href); },
      "Enter": function () { send("label"); },
    };
    const action = keys[ev.key.length === 1 ? ev.key.toLowerCase() : ev.key];
    if (action) { ev.preventDefault(); action(); }
  });

  document.addEventListener("change", function (ev) {
    if (ev.target && ev.target.name === "act") showAct();
  });

  document.addEventListener("submit", function (ev) {
    if (!ev.target || ev.target.id !== "verdict-form") return;
    ev.preventDefault();
    send(ev.submitter && ev.submitter.value ? ev.submitter.value : "label");
  });

  window.addEventListener("popstate", function () { window.location.reload(); });
})();

// Campaign list: show the SUT picker or the frameworks × models pickers, as the mode says.
(function () {
  "use strict";
  const form = document.querySelector("#start-campaign form");
  if (!form) return;
  function sync() {
    const checked = form.querySelector("input[name=mode]:checked");
    const mode = checked ? checked.value : "single";
    form.querySelectorAll("[data-mode]").forEach(function (row) {
      row.hidden = row.dataset.mode !== mode;
    });
  }
  form.addEventListener("change", sync);
  sync();
})();

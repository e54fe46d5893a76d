// Esc closes an open disclosure (<details>) the way it closes a dialog: the one holding the focus, or else the one
// opened last, and the focus goes back to its summary. Pages that want the focus elsewhere handle Esc first and
// call preventDefault (hit.js sends a flag's focus back to its item).
(function () {
  "use strict";
  let lastOpened = null;
  document.addEventListener("toggle", function (event) {
    if (event.target.tagName === "DETAILS" && event.target.open) lastOpened = event.target;
  }, true);

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape" || event.defaultPrevented || document.querySelector("dialog[open]")) return;
    const active = document.activeElement;
    let details = active && active.closest && active.closest("details[open]");
    if (!details && lastOpened && lastOpened.open && lastOpened.isConnected) details = lastOpened;
    if (!details) return;
    details.open = false;
    const summary = details.querySelector("summary");
    if (summary) summary.focus();
    event.preventDefault();
  });
})();

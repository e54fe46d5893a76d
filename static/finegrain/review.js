// The review page by keyboard: j/k move between units, y/n answer, 1-4 toggle error types, r goes to the reason,
// Ctrl+Enter saves the unit in view; Escape leaves the reason box.
(function () {
  "use strict";
  const units = () => Array.from(document.querySelectorAll(".review-unit"));
  let current = -1;

  function focusUnit(index) {
    const list = units();
    if (!list.length) return;
    current = Math.max(0, Math.min(index, list.length - 1));
    list.forEach((unit, i) => unit.classList.toggle("current", i === current));
    list[current].focus({ preventScroll: true });
    list[current].scrollIntoView({ block: "start", behavior: "auto" });
  }

  function unitInView() {
    if (current < 0) focusUnit(0);
    return units()[current];
  }

  document.addEventListener("DOMContentLoaded", () => {
    const hash = window.location.hash && document.querySelector(window.location.hash);
    if (hash && hash.classList.contains("review-unit")) focusUnit(units().indexOf(hash));
  });

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    const typing = target.matches && target.matches("textarea, input[type=text], select");
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      const form = (target.closest && target.closest("form.adjudicate")) || unitInView()?.querySelector("form.adjudicate");
      if (form) { event.preventDefault(); form.requestSubmit(); }
      return;
    }
    if (typing) {
      if (event.key === "Escape") { target.blur(); unitInView()?.focus({ preventScroll: true }); }
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const unit = ["j", "k"].includes(event.key) ? null : unitInView();
    if (event.key === "j") { focusUnit(current + 1); event.preventDefault(); }
    else if (event.key === "k") { focusUnit(current - 1); event.preventDefault(); }
    else if (unit && (event.key === "y" || event.key === "n")) {
      const radio = unit.querySelector(`input[name=answer][value=${event.key === "y" ? "yes" : "no"}]`);
      if (radio) { radio.checked = true; event.preventDefault(); }
    } else if (unit && /^[1-4]$/.test(event.key)) {
      const box = unit.querySelectorAll("input[name=error_types]")[Number(event.key) - 1];
      if (box) { box.checked = !box.checked; event.preventDefault(); }
    } else if (unit && event.key === "r") {
      unit.querySelector("textarea[name=reason]")?.focus();
      event.preventDefault();
    }
  });

  // A form that spends money (sending a HIT back buys labels) asks first, in the words of its data-confirm.
  document.addEventListener("submit", (event) => {
    const message = event.target.dataset?.confirm;
    if (message && !window.confirm(message)) event.preventDefault();
  });
})();

// The HIT page: keyboard control, highlights that follow the item in focus, time on each item, and the submit
// confirmation. Everything works without this file (the form posts all answers); it only makes work faster.
// Answers are saved by htmx (hx-post on each item's fieldset, triggered by `change`), so this file only clicks
// the inputs and never talks to the server itself.
(function () {
  "use strict";

  const hit = document.getElementById("hit");
  if (!hit) return;
  const task = hit.dataset.task;
  const form = document.getElementById("answers");
  const source = document.getElementById("source");
  const items = Array.from(form.querySelectorAll("fieldset.item"));
  const grid = document.getElementById("ka-matrix");
  const confirmDialog = document.getElementById("confirm-submit");
  const instructionsDialog = document.getElementById("instructions-dialog");
  const answeredCount = document.getElementById("answered-count");
  const ERROR_TYPE_KEYS = ["1", "2", "3", "4"];

  let current = -1;
  let focusStart = null; // performance.now() when the current item got focus, null while the page is hidden
  let lit = [];
  let litKey = null;
  let confirmed = false;

  // --- Time on task: the seconds an item is the current one while the page is visible.
  function secondsInput(item) {
    return item.querySelector('input[name$="-seconds"]');
  }

  function account() {
    if (current >= 0 && focusStart !== null) {
      const input = secondsInput(items[current]);
      const total = parseFloat(input.value || "0") + (performance.now() - focusStart) / 1000;
      input.value = total.toFixed(1);
    }
    focusStart = document.hidden ? null : performance.now();
  }

  document.addEventListener("visibilitychange", account);
  window.addEventListener("blur", function () { account(); focusStart = null; });
  window.addEventListener("focus", function () { if (focusStart === null && !document.hidden) focusStart = performance.now(); });

  // --- Highlights: a class toggle on the already rendered source sentences, never a re-render.
  function highlight(item) {
    const key = item.dataset.highlight || "";
    if (key === litKey) return;
    litKey = key;
    lit.forEach(function (el) { el.classList.remove("hl"); delete el.dataset.rank; });
    lit = [];
    // Strongest first: each lit sentence shows its rank, and the source opens at the best match.
    key.split(" ").forEach(function (index) {
      const el = index && document.getElementById("s" + index);
      if (el) { el.classList.add("hl"); lit.push(el); el.dataset.rank = String(lit.length); }
    });
    if (lit.length) {
      const offset = lit[0].getBoundingClientRect().top - source.getBoundingClientRect().top;
      source.scrollTop += offset - 48;
    }
  }

  function focusItem(index) {
    if (!items.length) return;
    index = Math.max(0, Math.min(items.length - 1, index));
    if (index === current) return;
    account();
    if (current >= 0) items[current].classList.remove("current");
    current = index;
    const item = items[current];
    item.classList.add("current");
    highlight(item);
    item.scrollIntoView({ block: "nearest" });
    focusStart = document.hidden ? null : performance.now();
  }

  // The sticky submit bar sits over the bottom of the answers: items keep its height clear when scrolled into
  // view (scroll-margin-bottom in app.css reads --submit-bar-height). Measured, since the bar wraps on narrow pages.
  const submitBar = form.querySelector(".submit-bar");
  function measureSubmitBar() {
    if (submitBar) form.style.setProperty("--submit-bar-height", submitBar.offsetHeight + "px");
  }
  measureSubmitBar();
  window.addEventListener("resize", measureSubmitBar);

  items.forEach(function (item, index) {
    item.addEventListener("focusin", function () { focusItem(index); });
    item.addEventListener("click", function () { focusItem(index); });
  });

  // --- Answers.
  function radio(item, field, value) {
    return item.querySelector('input[type=radio][name$="-' + field + '"][value="' + value + '"]');
  }

  function choose(item, field, value) {
    const input = radio(item, field, value);
    if (input && !input.checked) input.click(); // fires `change`: htmx saves the item
    return Boolean(input);
  }

  function missing(item) {
    const result = [];
    (item.dataset.required || "").split(" ").filter(Boolean).forEach(function (field) {
      if (!item.querySelector('input[type=radio][name$="-' + field + '"]:checked')) result.push(field);
    });
    const hasError = radio(item, "has_error", "yes");
    if (hasError && hasError.checked && !item.querySelector('input[type=checkbox][name$="-error_types"]:checked')) {
      result.push("error_types");
    }
    return result;
  }

  const QUESTIONS = {
    ai_right: "is the AI right?", has_error: "factual error?", error_types: "error types",
    useful: "useful?", aligned: "can it be inferred?",
  };

  function updateCount() {
    const done = items.filter(function (item) { return missing(item).length === 0; }).length;
    if (answeredCount) answeredCount.textContent = String(done);
    items.forEach(function (item) { item.classList.toggle("complete", missing(item).length === 0); });
  }

  // "Is the AI right?" and "has an error?" are one decision where the AI judgment is shown (the server refuses a
  // pair that contradicts itself): either answer sets the other. In the capture phase, before htmx on the item
  // reads the values to save, and without a second `change` (one save carries both).
  function derivedAnswer(item, field, value) {
    const aiSaysError = item.dataset.aiSaysError;
    if (!aiSaysError || (field !== "ai_right" && field !== "has_error")) return null;
    if (field === "has_error") return { field: "ai_right", value: value === aiSaysError ? "yes" : "no" };
    return { field: "has_error", value: (value === "yes") === (aiSaysError === "yes") ? "yes" : "no" };
  }

  form.addEventListener("change", function (event) {
    const input = event.target;
    const item = input.closest && input.closest("fieldset.item");
    if (!item || input.type !== "radio" || !input.checked) return;
    const field = input.name.slice(input.name.indexOf("-") + 1);
    const other = derivedAnswer(item, field, input.value);
    const partner = other && radio(item, other.field, other.value);
    if (partner) partner.checked = true;
  }, true);

  form.addEventListener("change", function (event) {
    const item = event.target.closest("fieldset.item");
    // Ticking an error type means the sentence has an error.
    if (item && event.target.type === "checkbox" && event.target.checked) choose(item, "has_error", "yes");
    updateCount();
  });

  // htmx does not swap error responses by default; the item's save state must show them.
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    const status = event.detail.xhr.status;
    if (status >= 400 && status < 500 && event.detail.target && event.detail.target.classList.contains("state")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  // Send the time measured so far with every save.
  document.body.addEventListener("htmx:configRequest", function (event) {
    const item = event.detail.elt.closest && event.detail.elt.closest("fieldset.item");
    if (!item) return;
    if (items.indexOf(item) === current) account();
    const input = secondsInput(item);
    event.detail.parameters[input.name] = input.value;
  });

  // --- Submitting: Enter (or the button) asks first; the dialog lists what is missing.
  function openConfirm() {
    const gaps = [];
    items.forEach(function (item) {
      const fields = missing(item);
      if (fields.length) gaps.push({ item: item, fields: fields });
    });
    const list = document.getElementById("confirm-missing");
    const text = document.getElementById("confirm-text");
    const yes = document.getElementById("confirm-yes");
    list.replaceChildren();
    if (gaps.length) {
      text.textContent = gaps.length + " item(s) still need an answer:";
      gaps.forEach(function (gap) {
        const li = document.createElement("li");
        li.textContent = gap.item.querySelector("legend").textContent + ": " +
          gap.fields.map(function (f) { return QUESTIONS[f] || f; }).join(", ");
        list.appendChild(li);
      });
      yes.hidden = true;
      confirmDialog.dataset.firstGap = String(items.indexOf(gaps[0].item));
    } else {
      text.textContent = "All " + items.length + " items are answered. Submit the HIT now? You cannot change it afterwards.";
      yes.hidden = false;
      delete confirmDialog.dataset.firstGap;
    }
    confirmDialog.showModal();
    (gaps.length ? document.getElementById("confirm-no") : yes).focus();
  }

  document.getElementById("confirm-yes").addEventListener("click", function () {
    confirmed = true;
    confirmDialog.close();
    form.requestSubmit();
  });
  document.getElementById("confirm-no").addEventListener("click", function () { confirmDialog.close(); });
  confirmDialog.addEventListener("close", function () {
    if (!confirmed && confirmDialog.dataset.firstGap) focusItem(parseInt(confirmDialog.dataset.firstGap, 10));
  });

  form.addEventListener("submit", function (event) {
    if (!confirmed) {
      event.preventDefault();
      openConfirm();
      return;
    }
    account();
    document.getElementById("submit-hit").disabled = true; // a double click sends one submission
  });

  // --- Instructions in a dialog (the link opens the page when scripts do not run).
  // showModal() focuses the first control inside, the Close button at the very end, and scrolls down to it: the
  // dialog itself takes the focus instead (Esc still closes it), and it opens at its top.
  function openInstructions() {
    instructionsDialog.showModal();
    instructionsDialog.focus({ preventScroll: true });
    instructionsDialog.scrollTop = 0;
  }
  document.getElementById("open-instructions").addEventListener("click", function (event) {
    event.preventDefault();
    openInstructions();
  });
  document.getElementById("close-instructions").addEventListener("click", function () { instructionsDialog.close(); });

  // --- The keyboard.
  function answer(key) {
    const item = items[current];
    if (!item) return false;
    if (task === "fv") {
      if (key === "y") return choose(item, "has_error", "yes");
      if (key === "n") return choose(item, "has_error", "no");
      // Agreeing or disagreeing with the AI also answers "has an error?" (the capture listener above).
      if (key === "r") return choose(item, "ai_right", "yes");
      if (key === "w") return choose(item, "ai_right", "no");
      const typeIndex = ERROR_TYPE_KEYS.indexOf(key);
      if (typeIndex >= 0) {
        const boxes = item.querySelectorAll('input[type=checkbox][name$="-error_types"]');
        if (!boxes[typeIndex]) return false;
        if (!boxes[typeIndex].checked) choose(item, "has_error", "yes");
        boxes[typeIndex].click();
        return true;
      }
      return false;
    }
    const field = task === "kv" ? "useful" : "aligned";
    if (key === "y" || key === "n") {
      choose(item, field, key === "y" ? "yes" : "no");
      if (current < items.length - 1) focusItem(current + 1); // one question per item: move on
      return true;
    }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (document.querySelector("dialog[open]")) return; // dialogs handle their own keys (Esc closes)
    const target = event.target;
    if (target.matches && target.matches("textarea, input[type=text], select")) return;
    const key = event.key;
    let handled = true;
    // The alignment grid: arrows move along a row (left/right) or a column (up/down); j/k go cell by cell. A KA
    // HIT of scattered pairs has no grid: its items are a list, as FV and KV items.
    const columns = grid ? grid.querySelectorAll("thead .ka-col").length : 1;
    if (key === "j" || key === "ArrowRight" && grid) focusItem(current + 1);
    else if (key === "k" || key === "ArrowLeft" && grid) focusItem(current - 1);
    else if (key === "ArrowDown") { if (current + columns < items.length) focusItem(current + columns); }
    else if (key === "ArrowUp") { if (current - columns >= 0) focusItem(current - columns); }
    else if (key === "?") openInstructions();
    else if (key === "Enter") {
      if (target.matches && target.matches("button, a, summary")) return; // let Enter press what has focus
      openConfirm();
    } else handled = answer(key.toLowerCase());
    if (handled) event.preventDefault();
  });

  // Start on the first item that still needs an answer.
  updateCount();
  const firstOpen = items.findIndex(function (item) { return missing(item).length > 0; });
  focusItem(firstOpen >= 0 ? firstOpen : 0);
})();

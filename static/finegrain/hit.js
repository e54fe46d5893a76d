// The HIT page: keyboard control, highlights that follow the item in focus, time on each item, and the submit
// confirmation. One focus: the item the keys act on is the item that holds the keyboard focus; moving with the
// keys moves the focus, and tabbing or clicking into an item makes it the current one. Everything works without this file (the form posts all answers); it only makes work faster.
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
  const shortcutsSwitch = document.getElementById("shortcuts-on");
  const sourceSwitch = document.getElementById("source-toggle");
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

  // The grid draws the current cell's key-fact (row heading) and summary sentence (column heading).
  const rowHeads = grid ? Array.from(grid.querySelectorAll("tbody .ka-rowhead")) : [];
  const colHeads = grid ? Array.from(grid.querySelectorAll("thead .ka-col")) : [];
  function markGridHeadings(item) {
    if (!grid) return;
    const cell = item.closest("td");
    const row = rowHeads.indexOf(cell.parentElement.querySelector(".ka-rowhead"));
    const column = Array.prototype.indexOf.call(cell.parentElement.children, cell) - 1;
    rowHeads.forEach(function (head, i) { head.classList.toggle("ka-current", i === row); });
    colHeads.forEach(function (head, i) { head.classList.toggle("ka-current", i === column); });
    grid.querySelectorAll("td.ka-current-line").forEach(function (td) { td.classList.remove("ka-current-line"); });
    grid.querySelectorAll("tbody tr").forEach(function (tr) {
      const td = tr.children[column + 1];
      if (td) td.classList.add("ka-current-line");
    });
    Array.from(cell.parentElement.children).forEach(function (td) {
      if (td.tagName === "TD") td.classList.add("ka-current-line");
    });
  }

  // `moveFocus`: the keys moved the current item, so the keyboard focus follows (the fieldset itself takes it, so
  // that arrows keep moving through the items until Tab enters the item's answers).
  function focusItem(index, moveFocus) {
    if (!items.length) return;
    index = Math.max(0, Math.min(items.length - 1, index));
    const item = items[index];
    if (index !== current) {
      account();
      if (current >= 0) items[current].classList.remove("current");
      current = index;
      item.classList.add("current");
      highlight(item);
      markGridHeadings(item);
      focusStart = document.hidden ? null : performance.now();
    }
    // Only when the keys moved it: a focus that arrives by Tab or a click is in view already, and scrolling between
    // a press and its release would take the click away from what was pressed.
    if (!moveFocus) return;
    if (!item.contains(document.activeElement)) item.focus({ preventScroll: true });
    item.scrollIntoView({ block: "nearest" });
  }

  // The sticky submit bar sits over the bottom of the answers: items keep its height clear when scrolled into
  // view (scroll-margin-bottom in app.css reads --submit-bar-height). Measured, since the bar wraps on narrow pages.
  // Set on the root: the answers column scrolls on wide pages, the window on narrow ones, and both keep whatever
  // has the focus clear of the bar (scroll-padding in app.css). The grid keeps it clear of its sticky headings.
  const submitBar = form.querySelector(".submit-bar");
  const root = document.documentElement;
  function measure() {
    if (submitBar) root.style.setProperty("--submit-bar-height", submitBar.offsetHeight + "px");
    if (grid) {
      root.style.setProperty("--ka-head-height", grid.querySelector("thead").offsetHeight + "px");
      root.style.setProperty("--ka-rowhead-width", grid.querySelector(".ka-corner").offsetWidth + "px");
    }
  }
  measure();
  window.addEventListener("resize", measure);

  // An item's flag sits beside its fieldset: the flag's focus belongs to that item too.
  function itemOf(element) {
    if (!element || !element.closest) return null;
    const owner = element.closest("fieldset.item") ||
      (element.closest("details.flag") && document.getElementById("item-" + element.closest("details.flag").id.slice(5)));
    return owner && items.indexOf(owner) >= 0 ? owner : null;
  }
  form.addEventListener("focusin", function (event) {
    const item = itemOf(event.target);
    if (item) focusItem(items.indexOf(item));
  });
  items.forEach(function (item, index) {
    // A click on an item's text (not on a control) gives the item the focus.
    item.addEventListener("click", function (event) {
      if (!event.target.closest("input, label, button, summary, textarea, a")) focusItem(index, true);
    });
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
    if (!confirmed && confirmDialog.dataset.firstGap) focusItem(parseInt(confirmDialog.dataset.firstGap, 10), true);
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
      if (current < items.length - 1) focusItem(current + 1, true); // one question per item: move on
      return true;
    }
    return false;
  }

  // --- A flag: f opens the current item's comment box, Ctrl+Enter saves it, Esc closes it and goes back to the item.
  function flagOf(item) {
    return document.getElementById("flag-" + item.dataset.position);
  }
  function openFlag(item) {
    const details = flagOf(item);
    if (!details) return false;
    details.open = true;
    details.querySelector("textarea").focus();
    return true;
  }
  document.addEventListener("keydown", function (event) {
    const details = event.target.closest && event.target.closest("details.flag");
    if (!details) return;
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && event.target.tagName === "TEXTAREA") {
      event.preventDefault();
      details.querySelector("button").click();
    } else if (event.key === "Escape") {
      event.preventDefault(); // before disclosure.js, which would send the focus to the summary
      details.open = false;
      const item = itemOf(details);
      if (item) focusItem(items.indexOf(item), true);
    }
  }, true);

  // --- The source beside a grid folds away, and the grid takes the width (remembered, as the shortcuts' switch).
  function remembered(name) {
    try { return window.localStorage.getItem("finegrain." + name); } catch (error) { return null; }
  }
  function remember(name, value) {
    try { window.localStorage.setItem("finegrain." + name, value); } catch (error) { /* storage refused: this page only */ }
  }
  const columnsBox = source.closest(".hit-columns");
  function showSource(shown) {
    columnsBox.classList.toggle("source-folded", !shown);
    sourceSwitch.setAttribute("aria-expanded", String(shown));
    sourceSwitch.textContent = shown ? "Hide the source" : "Show the source";
    remember("source", shown ? "shown" : "folded");
    measure();
  }
  if (sourceSwitch) {
    sourceSwitch.hidden = false;
    sourceSwitch.addEventListener("click", function () { showSource(columnsBox.classList.contains("source-folded")); });
    if (remembered("source") === "folded") showSource(false);
  }

  // --- One-key shortcuts can be switched off (a screen reader or speech input sends letters of its own).
  let shortcutsOn = remembered("shortcuts") !== "off";
  if (shortcutsSwitch) {
    shortcutsSwitch.closest("label").hidden = false;
    shortcutsSwitch.checked = shortcutsOn;
    shortcutsSwitch.addEventListener("change", function () {
      shortcutsOn = shortcutsSwitch.checked;
      remember("shortcuts", shortcutsOn ? "on" : "off");
      document.getElementById("shortcut-keys").hidden = !shortcutsOn;
    });
    document.getElementById("shortcut-keys").hidden = !shortcutsOn;
  }

  document.addEventListener("keydown", function (event) {
    if (!shortcutsOn || event.defaultPrevented) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (document.querySelector("dialog[open]")) return; // dialogs handle their own keys (Esc closes)
    const target = event.target;
    if (target.matches && target.matches("textarea, input[type=text], input[type=number], select")) return;
    const key = event.key;
    // Arrows move through the items only from an item itself (or from nowhere): on a radio they choose among its
    // answers, in the source or on a page control they scroll, as everywhere else.
    const arrowsMove = target === document.body || target === document.documentElement ||
      (target.matches && target.matches("fieldset.item"));
    if (key.startsWith("Arrow") && !arrowsMove) return;
    let handled = true;
    // The alignment grid: arrows move along a row (left/right) or a column (up/down); j/k go cell by cell. A KA
    // HIT of scattered pairs has no grid: its items are a list, as FV and KV items.
    const columns = grid ? colHeads.length : 1;
    if (key === "j" || key === "ArrowRight" && grid) focusItem(current + 1, true);
    else if (key === "k" || key === "ArrowLeft" && grid) focusItem(current - 1, true);
    else if (key === "ArrowDown") { if (current + columns < items.length) focusItem(current + columns, true); }
    else if (key === "ArrowUp") { if (current - columns >= 0) focusItem(current - columns, true); }
    else if (key === "?") openInstructions();
    else if (key === "f") handled = openFlag(items[current]);
    else if (key === "s" && sourceSwitch) showSource(columnsBox.classList.contains("source-folded"));
    else if (key === "Enter") {
      if (target.matches && target.matches("button, a, summary")) return; // let Enter press what has focus
      openConfirm();
    } else {
      handled = answer(key.toLowerCase());
      // An answer given from outside the items (the source, a link) brings the focus back to the item it answered.
      if (handled && items[current] && !items[current].contains(document.activeElement)) focusItem(current, true);
    }
    if (handled) event.preventDefault();
  });

  // Start on the first item that still needs an answer, with the focus in it.
  updateCount();
  const firstOpen = items.findIndex(function (item) { return missing(item).length > 0; });
  focusItem(firstOpen >= 0 ? firstOpen : 0, true);
})();

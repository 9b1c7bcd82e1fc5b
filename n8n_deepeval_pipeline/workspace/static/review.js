// The review page's keyboard. The forms work without it: this only spares the mouse.
//   p / f      pass or fail the metric in focus, then focus the next one left to label
//   1–5        rate the metric in focus (the same number again clears the rating)
//   ↓ ↑  j k   focus another metric          c   write a comment (Esc leaves it)
//   Enter      give the labels (once every metric has a verdict or a rating), then next run
//   s          skip the run                   u   undo the last label or skip
(function () {
  "use strict";

  function metrics() {
    return Array.from(document.querySelectorAll("form.label-form fieldset.metric"));
  }

  function focused() {
    return document.querySelector("form.label-form fieldset.metric.focused") || metrics()[0];
  }

  function focus(fieldset) {
    for (const each of metrics()) each.classList.toggle("focused", each === fieldset);
    if (fieldset) fieldset.scrollIntoView({ block: "nearest" });
  }

  function labelled(fieldset) {
    return Boolean(
      fieldset.querySelector('input[name^="verdict:"]:checked') ||
        fieldset.querySelector('input[name^="rating:"]:checked:not([value=""])')
    );
  }

  function move(step) {
    const all = metrics();
    const at = all.indexOf(focused());
    focus(all[Math.min(Math.max(at + step, 0), all.length - 1)]);
  }

  function check(input) {
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function verdict(value) {
    const fieldset = focused();
    if (!fieldset) return;
    check(fieldset.querySelector(`input[name^="verdict:"][value="${value}"]`));
    const next = metrics().find((each) => !labelled(each));
    if (next) focus(next);
  }

  function rate(value) {
    const fieldset = focused();
    if (!fieldset) return;
    const input = fieldset.querySelector(`input[name^="rating:"][value="${value}"]`);
    check(input.checked ? fieldset.querySelector('input[name^="rating:"][value=""]') : input);
  }

  function comment() {
    const fieldset = focused();
    const area = fieldset && fieldset.querySelector("textarea");
    if (area) area.focus();
  }

  function post(selector) {
    const form = document.querySelector(selector);
    if (form) form.requestSubmit();
  }

  // Enter: the labels given when every metric has one; on a labelled run, the next run.
  function enter() {
    const form = document.querySelector("form.label-form");
    if (!form) {
      const next = document.querySelector("a.next");
      if (next) next.click();
      return;
    }
    const missing = metrics().find((each) => !labelled(each));
    if (missing) {
      focus(missing);
      const said = form.querySelector("p.missing");
      said.textContent = `${missing.dataset.metric}: give pass or fail (p / f) or a rating (1–5)`;
      said.hidden = false;
      return;
    }
    form.requestSubmit();
  }

  const KEYS = {
    p: () => verdict("pass"),
    f: () => verdict("fail"),
    1: () => rate("1"),
    2: () => rate("2"),
    3: () => rate("3"),
    4: () => rate("4"),
    5: () => rate("5"),
    ArrowDown: () => move(1),
    j: () => move(1),
    ArrowUp: () => move(-1),
    k: () => move(-1),
    c: comment,
    s: () => post("form.skip"),
    u: () => post("form.undo"),
    Enter: enter,
  };

  document.addEventListener("keydown", (event) => {
    if (!document.getElementById("review") || event.ctrlKey || event.metaKey || event.altKey) {
      return;
    }
    const target = event.target;
    if (target.closest("textarea, input[type=text], input[type=number], select, details")) {
      if (event.key === "Escape") target.blur();
      return; // typing: the keys are letters
    }
    if (event.key === "Enter" && target.closest("button, a")) return; // the one in focus
    const action = Object.prototype.hasOwnProperty.call(KEYS, event.key) && KEYS[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });

  // A click or a tab into a metric puts it in focus for the keys.
  document.addEventListener("focusin", (event) => {
    const fieldset = event.target.closest && event.target.closest("fieldset.metric");
    if (fieldset) focus(fieldset);
  });
  document.addEventListener("click", (event) => {
    const fieldset = event.target.closest && event.target.closest("fieldset.metric");
    if (fieldset) focus(fieldset);
  });

  // A form refused (400, 404, 409, 503) answers with a page saying why: show it in place,
  // as it would be shown without JavaScript (htmx leaves error answers unshown by default).
  document.addEventListener("htmx:beforeSwap", (event) => {
    if (event.detail.xhr.status >= 400 && document.getElementById("review")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();

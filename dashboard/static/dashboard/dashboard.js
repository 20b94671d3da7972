/* MMW dashboard behaviour, in a file because the Content-Security-Policy forbids inline handlers.
 *   <form data-confirm="Text?">          asks before submitting (a plain form, not htmx: htmx has hx-confirm)
 *   <button data-copy="#id">             copies that element's text (then reads data-copied, translated)
 *   <button data-copy-in-card="pre">     copies the text of that selector inside the button's .card
 *   <select data-navigate>               goes to the chosen option's value (a URL)
 *   <select data-submit>                 submits its form when changed (the language switch)
 */
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  }, true);
  document.addEventListener("click", function (event) {
    var button = event.target instanceof Element ? event.target.closest("[data-copy], [data-copy-in-card]") : null;
    if (!button) return;
    var source = button.dataset.copy
      ? document.querySelector(button.dataset.copy)
      : button.closest(".card") && button.closest(".card").querySelector(button.dataset.copyInCard);
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent).then(function () { button.textContent = button.dataset.copied || "Copied"; });
  });
  document.addEventListener("change", function (event) {
    var select = event.target;
    if (select instanceof HTMLSelectElement && select.hasAttribute("data-navigate") && select.value) {
      window.location.href = select.value;
    }
    if (select instanceof HTMLSelectElement && select.hasAttribute("data-submit") && select.form) {
      select.form.requestSubmit();
    }
  });
})();

/* django-weft's console: an inline's box (a module's revisions), which scrolls sideways
 * in a narrow window and holds nothing focusable, takes the focus, so the keyboard can
 * scroll it (WCAG 2.1.1; axe-core's scrollable-region-focusable). No dependency. The
 * overview's boxes have their tabindex in the template. */
(function () {
  "use strict";
  function focusable() {
    document.querySelectorAll(".inline-related .wrapper, .inline-group").forEach(function (box) {
      if (!box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", focusable);
  else focusable();
})();

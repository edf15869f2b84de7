/* django-weft's console: a box that scrolls sideways (a table wider than a narrow
 * window, such as a module's revisions) can be scrolled from the keyboard: it takes the
 * focus (WCAG 2.1.1; axe-core's scrollable-region-focusable). No dependency. */
(function () {
  "use strict";
  function focusable() {
    document.querySelectorAll(".inline-related .wrapper, .weft-scroll").forEach(function (box) {
      if (!box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", focusable);
  else focusable();
})();

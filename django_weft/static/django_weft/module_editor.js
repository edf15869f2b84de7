/* django-weft's console: a stored module's source editor. Each textarea marked
 * data-weft-code gets a gutter of line numbers beside it, kept in step as lines are
 * typed and as the box scrolls, so an error's "Line 12" can be found. The textarea stays
 * the form's field: without this script it is still a monospace, unwrapped editor. The
 * gutter is hidden from screen readers (the numbers are not content) and takes no focus.
 * No dependency. */
(function () {
  "use strict";
  function numbered(area) {
    var editor = document.createElement("div");
    editor.className = "weft-code-editor";
    var gutter = document.createElement("pre");
    gutter.className = "weft-code-lines";
    gutter.setAttribute("aria-hidden", "true");
    area.parentNode.insertBefore(editor, area);
    editor.append(gutter, area);
    // Level with the textarea's lines whatever the stylesheets give it (the admin's
    // narrow layout sets form fields' font size): the same font, lines and top.
    var style = getComputedStyle(area);
    gutter.style.fontSize = style.fontSize;
    gutter.style.lineHeight = style.lineHeight;
    gutter.style.paddingTop = style.paddingTop;
    gutter.style.borderTopWidth = style.borderTopWidth;
    var shown = 0;
    function count() {
      var lines = area.value.split("\n").length;
      if (lines !== shown) {
        var numbers = [];
        for (var line = 1; line <= lines; line += 1) numbers.push(line);
        gutter.textContent = numbers.join("\n") + "\n";
        shown = lines;
      }
      gutter.scrollTop = area.scrollTop;
    }
    area.addEventListener("input", count);
    area.addEventListener("scroll", function () { gutter.scrollTop = area.scrollTop; });
    count();
  }
  function start() {
    document.querySelectorAll("textarea[data-weft-code]").forEach(numbered);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

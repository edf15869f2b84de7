// Output boxes that follow their tail, as a terminal does: while the reader is at the
// bottom, each new line scrolls into view; once they scroll up to read, the box stays
// where they put it while lines keep coming; scrolling back down to the end follows
// again. A box is updated in place (never rebuilt), so the browser keeps its position.
const AT_BOTTOM_PX = 4; // rounding and sub-pixel layouts leave a few pixels
// A scroll down that stops this close to the end (a share of the box's height) follows
// too: lines arriving while it moved leave it short of an end that kept moving.
const NEAR_END_SHARE = 0.25;
const views = new WeakMap(); // box -> { follow, top }

function watch(box) {
  const view = { follow: true, top: 0 };
  views.set(box, view);
  // A move up never follows, even one that ends a pixel from the end: a smooth scroll
  // reports its first small steps there, and following then would pull the box back down
  // on the next line and undo the reader's scroll.
  box.addEventListener("scroll", () => {
    const moved = box.scrollTop - view.top;
    const gap = box.scrollHeight - box.scrollTop - box.clientHeight;
    view.top = box.scrollTop;
    if (moved < 0) view.follow = false;
    else if (moved > 0) {
      view.follow ||= gap <= Math.max(AT_BOTTOM_PX, box.clientHeight * NEAR_END_SHARE);
    }
  });
  // A wheel says what the reader wants before its scroll reports a move: turned up, "stop
  // following", so a line arriving meanwhile does not pull the box back down; turned down
  // past the end, "follow", so lines arriving before the scroll lands (many, on a busy
  // machine) do not leave the box short of an end that kept moving.
  box.addEventListener("wheel", (event) => {
    if (event.deltaY < 0) view.follow = false;
    else if (box.scrollTop + box.clientHeight + event.deltaY >= box.scrollHeight) {
      view.follow = true;
    }
  }, { passive: true });
}

// Show `text` in `cell`'s output box, made on first use.
export function showOutput(cell, text) {
  let box = cell.querySelector("pre.output");
  if (!box) {
    box = document.createElement("pre");
    box.className = "output";
    // It scrolls: the keyboard reaches it too (WCAG 2.1.1), and a reader hears what it is.
    box.tabIndex = 0;
    box.setAttribute("role", "region");
    box.setAttribute("aria-label", "output");
    cell.replaceChildren(box);
    watch(box);
  }
  if (box.textContent === text) return;
  box.textContent = text;
  if (views.get(box).follow) box.scrollTop = box.scrollHeight;
}

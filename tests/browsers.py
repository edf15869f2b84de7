"""Real browsers on a real console: Debian's chromium (playwright) and ``runjobs --http``.

Used by the browser tests and by ``scripts/console_screenshots.py``. The server is a
``runjobs --http`` subprocess serving the test project (``tests.asgi``) on the database
this process uses, so the runs it executes and the pages it serves are the real thing,
and the in-memory channel layer carries the changes to the browser's socket.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from tests.example_server import free_port
from tests.patience import EVENTUALLY
from tests.processes import port_is_open, runjobs, wait_for

#: How long a page may take to show what a test waits for, in milliseconds: every
#: ``expect()`` and every action of the browser tests waits up to :data:`EVENTUALLY`.
EVENTUALLY_MS = round(EVENTUALLY * 1000)

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

#: Every element wider than the window (what makes a page scroll sideways), and every
#: element that clips or scrolls its own content sideways (a table cut off in its box).
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const clips = (element) => getComputedStyle(element).overflowX !== "visible";
  return [...document.querySelectorAll("body *:not(.visually-hidden)")]
    .filter((element) => element.scrollWidth > width
      || (clips(element) && element.scrollWidth > element.clientWidth + 1))
    .map((element) => `${element.tagName.toLowerCase()}#${element.id}.${element.className}`
      + ` (${element.scrollWidth} px in ${element.clientWidth} px)`);
}"""

#: axe-core, from the npm registry into tests/browser/axe/ (``npm ci`` there, as
#: scripts/test.sh does); a test loads it into a page and runs :data:`RUN_AXE`.
AXE = (
    Path(__file__).resolve().parent / "browser" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
)
#: The rules of WCAG 2.0, 2.1 and 2.2 at levels A and AA.
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
#: Each violation of the rules of the tags it is given, with the nodes it found.
RUN_AXE = """(tags) => axe.run(document, {runOnly: {type: "tag", values: tags}})
  .then((results) => results.violations.map((violation) => ({
    id: violation.id,
    help: violation.help,
    nodes: violation.nodes.map((node) => `${node.target.join(" ")}: ${node.failureSummary}`),
  })))"""
#: How much wider than the window the page is (it scrolls sideways by that much).
TOO_WIDE = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


def chromium(playwright: Playwright) -> Browser:
    executable = shutil.which("chromium")
    assert executable, "Debian's chromium is required: apt-get install -y chromium"
    return playwright.chromium.launch(
        executable_path=executable, headless=True, args=CHROMIUM_FLAGS
    )


@contextmanager
def console_server(*, extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """``runjobs --http`` on a free port until the block ends; yields its base URL."""
    port = free_port()
    process = runjobs("--http", f"127.0.0.1:{port}", "--shutdown-grace", "2", extra_env=extra_env)
    try:
        wait_for(lambda: port_is_open(port) or process.poll() is not None, what="runjobs --http")
        if process.poll() is not None:
            raise AssertionError(f"runjobs --http exited:\n{process.finish()}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stop(20)


def new_page(browser: Browser, **context_options: Any) -> Page:
    """A page in a new browser context whose actions wait up to :data:`EVENTUALLY_MS`."""
    context = browser.new_context(**context_options)
    context.set_default_timeout(EVENTUALLY_MS)
    return context.new_page()


def admin_page(browser: Browser, base: str, username: str, path: str, width: int = 1280) -> Page:
    """A new browser window ``width`` px wide, signed in to the admin, showing ``path``."""
    page = new_page(browser, viewport={"width": width, "height": 900})
    page.goto(f"{base}/admin/login/?next={path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", username)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}{path}")
    return page


#: The screenshots of docs/images: ``(width, colour scheme, file name suffix)``.
SCREENSHOT_VIEWS: tuple[tuple[int, Literal["light", "dark"], str], ...] = (
    (1280, "light", ""),
    (1280, "dark", "-dark"),
    (390, "light", "-390"),
    (390, "dark", "-390-dark"),
)


def photograph(
    page: Page, image: Path, ready: Callable[[Page], None], *, full_page: bool = True
) -> list[Path]:
    """Screenshots of the page ``page`` shows, at each of :data:`SCREENSHOT_VIEWS`: the
    page is read again for each, and ``ready`` brings it to the state to photograph."""
    url = page.url
    written = []
    for width, scheme, suffix in SCREENSHOT_VIEWS:
        page.set_viewport_size({"width": width, "height": 900})
        page.emulate_media(color_scheme=scheme)
        page.goto(url)
        ready(page)
        path = image.with_name(f"{image.stem}{suffix}{image.suffix}")
        page.screenshot(path=str(path), full_page=full_page)
        written.append(path)
    return written


def settled(page: Page) -> None:
    """Waits until the page has loaded and, on a page that follows runs, its socket has
    taken the first snapshot, so the page shows what it will go on showing.

    Not playwright's "networkidle": a page that follows a running run reads itself again
    about once a second, and on a busy machine each read can outlast the half second of
    quiet "networkidle" waits for, so it may never come.
    """
    page.wait_for_load_state("load")
    live = page.locator("#weft-live")
    if live.count():
        expect(live).to_have_text("live")


def overflowing(page: Page) -> list[str]:
    found: list[str] = page.evaluate(OVERFLOWING)
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium, headless, shared by a module's browser tests (see the conftest.py
    files of tests/browser and tests/faults, which offer it)."""
    expect.set_options(timeout=EVENTUALLY_MS)
    with sync_playwright() as playwright:
        launched = chromium(playwright)
        yield launched
        launched.close()

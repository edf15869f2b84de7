"""Every console page passes axe-core's WCAG 2 A and AA rules (contrast 4.5:1 among them),
in light and dark mode, at 1280 and 390 px, in Debian's chromium on ``runjobs --http``;
it reflows (no page wider than a 390 px window, its lists scrolling in their own box), no
list breaks a word at 1280 px, and the page buttons sit level with History.

axe-core comes from the npm registry into tests/browser/axe/ (``npm ci`` there, as
scripts/test.sh does); the test loads it into each page and prints every violation with
the nodes it found. The pages are those :mod:`django_weft.admin` registers, each list and
a page of one of its rows, plus the forms that add a schedule and a module; a test checks
that no registered page is left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import pytest_django
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import TransactionTestCase
from django.urls import reverse
from playwright.sync_api import Browser, Page

from django_weft.engine.runs.starting import StartRequest
from django_weft.jobs.workflows import WorkflowDefinition, chain
from django_weft.models import (
    AuditRecord,
    Document,
    Module,
    Run,
    RunStatus,
    Schedule,
    WorkerProcess,
)
from django_weft.operations import (
    create_limit_for,
    pause_queue_for,
    save_module_for,
    start,
    start_group,
    start_workflow,
)
from django_weft.sandbox.modules import save_module
from tests.browsers import (
    AXE,
    RUN_AXE,
    TOO_WIDE,
    WCAG_AA,
    admin_page,
    console_server,
    settled,
)
from tests.databases import delete_rows, last_ids
from tests.jobs import broken, build, noop
from tests.processes import wait_for

WIDTHS = (1280, 390)

#: The module's second revision: lines long enough to need a sideways scroll at 390 px.
GREETER = (
    "def hello(name):\n"
    "    greeting = f'Hello, {name}! Welcome to the newsroom, where every story starts.'\n"
    "    return greeting\n"
)
SCHEMES = ("light", "dark")

#: Each word of each list cell whose letters lie on more than one line, as "cell: word".
#: A word ends at a space, after a hyphen and where its text ends (at a tag such as
#: <br>), but not at a <wbr>: that is a break inside a word ("content.|digest").
BROKEN_WORDS = """() => {
  const broken = [];
  for (const cell of document.querySelectorAll("#result_list td, #result_list th")) {
    let word = "", top = null, bottom = null, height = 0;
    const end = () => {
      if (word && bottom - top > height / 2) broken.push(`${cell.className}: ${word}`);
      word = ""; top = null; bottom = null;
    };
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!(node.previousSibling && node.previousSibling.nodeName === "WBR")) end();
      for (let index = 0; index < node.data.length; index += 1) {
        const letter = node.data[index];
        if (/\\s/.test(letter)) { end(); continue; }
        const range = document.createRange();
        range.setStart(node, index);
        range.setEnd(node, index + 1);
        const box = range.getBoundingClientRect();
        if (!box.height) continue;
        word += letter;
        height = box.height;
        top = top === null ? box.top : Math.min(top, box.top);
        bottom = bottom === null ? box.top : Math.max(bottom, box.top);
        if (letter === "-") end();
      }
    }
    end();
  }
  return broken;
}"""

#: How much wider than its box a list's table is (0 for a page with no list table).
TABLE_SCROLLS = """() => {
  const box = document.querySelector("#changelist-form .results");
  return box ? box.scrollWidth - box.clientWidth : 0;
}"""


@dataclass(frozen=True)
class Console:
    """The server, and one row of each kind for the pages of a row."""

    base: str
    rows: dict[str, str]


@pytest.fixture(scope="module", autouse=True)
def _orm_beside_playwright() -> Iterator[None]:
    """The fixture's ORM calls run while playwright's sync API holds an event loop in this
    thread (see tests/browser/test_console_browser.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.any_database]


@pytest.fixture(scope="module")
def console(
    django_db_setup: None, django_db_blocker: pytest_django.DjangoDbBlocker
) -> Iterator[Console]:
    """A server with a row of every kind: a superuser, a schedule, a module, runs that
    finished (done and failed) and one that runs, a paused queue on record.

    One for the module: its tests only read pages, so the rows and the server (a
    process that takes seconds to start) are shared. While it lives, the end of each
    transactional test leaves the rows (the tests write none); they are deleted when the
    module is done, as a transactional test's are (:mod:`tests.databases`).
    """
    assert AXE.exists(), f"axe-core is missing: run `npm ci` in {AXE.parents[2]}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", lambda case: None)
        with django_db_blocker.unblock():
            written = last_ids("default")
        try:
            with django_db_blocker.unblock():
                root, schedule, module = console_rows()
            with console_server() as base:
                with django_db_blocker.unblock():
                    rows = console_runs(root, schedule, module)
                yield Console(base, rows)
        finally:
            with django_db_blocker.unblock():
                delete_rows("default", written)


def console_rows() -> tuple[Any, Schedule, Module]:
    """The superuser, a schedule (and another) and a module the pages show."""
    root = get_user_model().objects.create_superuser("root", "root@example.com", "root")
    schedule = Schedule.objects.create(
        name="nightly digest for the whole newsroom",
        job="content.digest",
        cron="0 7 * * *",
        timezone="America/Toronto",
    )
    Schedule.objects.create(name="refresh.sitemap", job="tests.noop", every=timedelta(minutes=20))
    module = save_module(
        Module(name="greeter", source="def hello(name):\n    return name\n", owner=root)
    )
    second = Module.objects.get(pk=module.pk)
    second.source = GREETER
    save_module_for(root, second)
    return root, schedule, module


def console_runs(root: Any, schedule: Schedule, module: Module) -> dict[str, str]:
    """Runs the server executes (done, failed, running), a paused queue and runs of long
    names; the id of one row of each kind, for the pages of a row."""
    done = start(build, {"steps": 1, "interval": 0})
    start(broken)
    start(build, {"steps": 10_000, "interval": 1})
    wait_for(
        lambda: (
            Run.objects.filter(status="running").exists() and Run.objects.finished().count() == 2
        ),
        what="two finished runs and a running one",
    )
    pause_queue_for(root, "reports")
    # Names of the width that broke words: "shell.ru|n", "defaul|t", "sh|ell|.n|oti|fy".
    for job, queue in (("shell.run", "default"), ("shell.notify", "reports-for-the-editors")):
        Run.objects.filter(pk=start(noop).pk).update(
            job=job, queue=queue, status=RunStatus.DONE, owner=root
        )
    group = start_group([StartRequest(noop) for _ in range(3)], name="thumbnails of an album")
    workflow = start_workflow(
        WorkflowDefinition("tests.pair", tuple(chain(noop, noop))), owner=root
    )
    limit = create_limit_for(
        root,
        {
            "name": "partner-api.calls",
            "job": "tests.noop",
            "rate": 10,
            "period": timedelta(seconds=1),
        },
    )
    return {
        "schedule": str(schedule.pk),
        "run": str(done.pk),
        "group": str(group.pk),
        "workflow": str(workflow.pk),
        "module": str(module.pk),
        "document": str(Document.objects.get(run=done).pk),
        "workerprocess": str(WorkerProcess.objects.get().pk),
        "auditrecord": str(AuditRecord.objects.order_by("pk").first().pk),  # type: ignore[union-attr]
        "flowlimit": str(limit.pk),
    }


def registered() -> list[str]:
    """The model names of the console's pages, as django_weft/admin.py registers them."""
    return sorted(
        model._meta.model_name or ""
        for model in admin.site._registry
        if model._meta.app_label == "django_weft"
    )


def pages() -> list[tuple[str, str]]:
    """``(name, URL name and arguments)`` of every console page: each list, a row's page,
    the forms that add."""
    found = []
    for name in registered():
        found.append((f"{name} list", f"admin:django_weft_{name}_changelist"))
        if name != "overview":
            found.append((f"{name} page", f"admin:django_weft_{name}_change"))
    found += [
        ("add schedule", "admin:django_weft_schedule_add"),
        ("add module", "admin:django_weft_module_add"),
        ("add flow limit", "admin:django_weft_flowlimit_add"),
        ("module revision", "admin:django_weft_module_revision"),
        ("try module", "admin:django_weft_module_try"),
    ]
    return found


def address(console: Console, url_name: str) -> str:
    if url_name == "admin:django_weft_module_revision":
        return reverse(url_name, args=[console.rows["module"], 2])
    if url_name == "admin:django_weft_module_try":
        return reverse(url_name, args=[console.rows["module"]])
    if url_name.endswith("_change"):
        model = url_name.removeprefix("admin:django_weft_").removesuffix("_change")
        return reverse(url_name, args=[console.rows[model]])
    return reverse(url_name)


def test_console_a11y_every_registered_page_is_checked() -> None:
    """A page added to django_weft/admin.py is checked below without a new line here."""
    names = {url.removeprefix("admin:django_weft_").rsplit("_", 1)[0] for _, url in pages()}
    assert names == set(registered())
    assert {"overview", "run", "schedule", "module", "workerprocess", "auditrecord"} <= names


@pytest.mark.parametrize(("title", "url_name"), pages(), ids=[title for title, _ in pages()])
def test_console_a11y_page_passes_axe_in_both_schemes_at_both_widths(
    browser: Browser, console: Console, title: str, url_name: str
) -> None:
    """No violation of WCAG 2 A or AA on the page, light and dark, at 1280 and 390 px."""
    path = address(console, url_name)
    page = admin_page(browser, console.base, "root", path)
    found: list[str] = []
    for width in WIDTHS:
        for scheme in SCHEMES:
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            page.goto(f"{console.base}{path}")
            settled(page)
            page.add_script_tag(path=str(AXE))
            for violation in page.evaluate(RUN_AXE, WCAG_AA):
                found.append(f"{width} px, {scheme}: {violation['id']} ({violation['help']})")
                found += [f"    {node}" for node in violation["nodes"]]
    assert not found, f"{title} ({path}):\n" + "\n".join(found)


def lists(console: Console) -> list[str]:
    return [reverse(url) for _, url in pages() if url.endswith("_changelist")]


def test_console_a11y_lists_break_no_word_at_1280_px(browser: Browser, console: Console) -> None:
    """At 1280 px, with the admin's sidebar open, every list fits the window (its table
    does not scroll) and a cell breaks its lines at spaces only: never "shell.ru|n"."""
    page = admin_page(browser, console.base, "root", reverse("admin:index"))
    for path in lists(console):
        page.goto(f"{console.base}{path}")
        settled(page)
        assert page.locator("#nav-sidebar").is_visible(), path
        assert page.evaluate(BROKEN_WORDS) == [], path
        assert page.evaluate(TOO_WIDE) <= 0, path
        assert page.evaluate(TABLE_SCROLLS) <= 0, path


def test_console_a11y_pages_fit_390_px(browser: Browser, console: Console) -> None:
    """At 390 px no page is wider than the window: a list wider than that scrolls in its
    own box, the overview's tables each in theirs, and the Pause button is whole."""
    page = admin_page(browser, console.base, "root", reverse("admin:index"), width=390)
    for _, url_name in pages():
        path = address(console, url_name)
        page.goto(f"{console.base}{path}")
        settled(page)
        assert page.evaluate(TOO_WIDE) <= 0, path
    page.goto(f"{console.base}{reverse('admin:django_weft_overview_changelist')}")
    pause = page.locator("#weft-queues button", has_text="Pause").first
    assert pause.evaluate("(button) => button.scrollWidth <= button.clientWidth")
    assert pause.inner_text().strip().lower() == "pause"


def level_with_history(page: Page) -> list[str]:
    """The page's buttons whose top is more than 1 px off History's."""
    history = page.locator(".object-tools .historylink").bounding_box()
    assert history is not None
    off = []
    for button in page.locator(".object-tools button").all():
        box = button.bounding_box()
        assert box is not None
        if abs(box["y"] - history["y"]) > 1 or abs(box["height"] - history["height"]) > 1:
            off.append(f"{button.inner_text()}: {box} beside History's {history}")
    return off


def test_console_a11y_buttons_sit_level_with_history(browser: Browser, console: Console) -> None:
    """On a run's page and a schedule's, each button's box is History's, to 1 px."""
    for width in WIDTHS:
        for model in ("run", "schedule"):
            path = reverse(f"admin:django_weft_{model}_change", args=[console.rows[model]])
            page = admin_page(browser, console.base, "root", path, width=width)
            assert page.locator(".object-tools button").count() > 0, path
            assert level_with_history(page) == [], f"{path} at {width} px"


def test_console_a11y_bulk_confirmation_lists_runs_and_looks_destructive(
    browser: Browser, console: Console
) -> None:
    """Every run ticked and "Delete selected runs": the confirmation lists them, passes
    axe in both schemes at both widths and fits 390 px; its button is Django's red of a
    deletion, level with "No, take me back", which leaves every run where it was."""
    runs = reverse("admin:django_weft_run_changelist")
    page = admin_page(browser, console.base, "root", runs)
    settled(page)
    listed = page.locator("#result_list tbody tr").count()
    page.check("#action-toggle")
    page.select_option("select[name=action]", "delete_action")
    page.click("button[name=index]")
    page.wait_for_selector(".weft-bulk-runs")
    assert page.locator(".weft-bulk-runs tbody tr").count() == min(listed, 10)
    page.add_script_tag(path=str(AXE))
    found: list[str] = []
    for width in WIDTHS:
        for scheme in SCHEMES:
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            # The admin's links fade to a scheme's colours (a transition): read them after.
            page.wait_for_function("() => document.getAnimations().length === 0")
            for violation in page.evaluate(RUN_AXE, WCAG_AA):
                found.append(f"{width} px, {scheme}: {violation['id']} ({violation['help']})")
                found += [f"    {node}" for node in violation["nodes"]]
            if width == 390:
                assert page.evaluate(TOO_WIDE) <= 0, scheme
    assert not found, "\n".join(found)
    yes = page.locator("form input[type=submit]")
    red = page.evaluate(
        "() => getComputedStyle(document.documentElement).getPropertyValue('--delete-button-bg')"
    )
    assert yes.evaluate("(el) => getComputedStyle(el).backgroundColor") == page.evaluate(
        "(color) => { const probe = document.createElement('i'); probe.style.color = color;"
        " document.body.append(probe); const rgb = getComputedStyle(probe).color;"
        " probe.remove(); return rgb; }",
        red.strip(),
    )
    back = page.locator("form .cancel-link")
    middles = []
    for button in (yes, back):
        box = button.bounding_box()
        assert box is not None
        middles.append(box["y"] + box["height"] / 2)
    assert abs(middles[0] - middles[1]) <= 1, "the two buttons sit on one line"
    back.click()
    page.wait_for_url(f"{console.base}{runs}")
    assert Run.objects.count() >= listed


#: The source editor's gutter: its numbers, and where its first number and the
#: textarea's first line of text sit (px from the page's top).
GUTTER = """() => {
  const area = document.querySelector("textarea[data-weft-code]");
  const gutter = area.parentElement.querySelector(".weft-code-lines");
  const firstLine = (element) => {
    const style = getComputedStyle(element);
    return element.getBoundingClientRect().top + parseFloat(style.borderTopWidth)
      + parseFloat(style.paddingTop);
  };
  return {
    numbers: gutter.textContent.trim().split("\\n"),
    gutterTop: firstLine(gutter),
    areaTop: firstLine(area),
    lineHeights: [getComputedStyle(gutter).lineHeight, getComputedStyle(area).lineHeight],
    wraps: getComputedStyle(area).whiteSpace,
    font: getComputedStyle(area).fontFamily,
  };
}"""


def test_console_module_source_has_line_numbers_that_follow_the_typing(
    browser: Browser, console: Console
) -> None:
    """A module's source editor is monospace, never wraps (at 390 px a long line scrolls
    sideways), and its gutter numbers each line, level with it, one more per new line."""
    path = reverse("admin:django_weft_module_change", args=[console.rows["module"]])
    page = admin_page(browser, console.base, "root", path, width=390)
    shown = page.evaluate(GUTTER)
    assert shown["numbers"] == ["1", "2", "3", "4"], "three lines and the empty one after"
    assert shown["gutterTop"] == pytest.approx(shown["areaTop"], abs=1)
    assert shown["lineHeights"][0] == shown["lineHeights"][1]
    assert shown["wraps"] == "pre"
    assert "monospace" in shown["font"]
    area = page.locator("textarea[data-weft-code]")
    assert area.evaluate("(el) => el.scrollWidth > el.clientWidth"), "a long line scrolls"
    area.press("Control+End")
    area.press_sequentially("\n\nprint('more')")
    assert page.evaluate(GUTTER)["numbers"][-1] == "6"

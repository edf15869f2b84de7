"""The console in a real browser (Debian's chromium) on a real server (``runjobs --http``).

The overview and a run page follow runs the server's own worker executes, over the
socket; the buttons work; ticked runs are retried from the list; the page's ANSI
renderer says what the server's says; the run list and the overview fit a 1280 px window.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import Browser, expect

from django_weft.console.ansi import to_html
from django_weft.console.formatting import duration, relative
from django_weft.models import Run, RunStatus, Schedule
from django_weft.operations import start
from tests.browsers import admin_page, console_server, overflowing, settled
from tests.console.test_console_text import SAMPLES
from tests.jobs import broken, build, gated, open_gate
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

OVERVIEW = "/admin/django_weft/overview/"
RUNS = "/admin/django_weft/run/"


@pytest.fixture(scope="module", autouse=True)
def _orm_beside_playwright() -> Iterator[None]:
    """Let the test's own ORM calls (and the database's teardown) run while playwright's
    sync API holds an event loop in this thread: Django's documented switch for such
    callers. The loop is playwright's and never touches the database."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture
def server(transactional_db: None) -> Iterator[str]:
    get_user_model().objects.create_superuser("root", "root@example.com", "root")
    with console_server() as base:
        yield base


def count(status: str) -> str:
    return f"#weft-counts .weft-count[data-status={status}]"


def outcome(status: str) -> str:
    return f"#weft-outcomes .weft-count[data-status={status}]"


def test_console_browser_overview_updates_while_runs_start_and_fail(
    browser: Browser, server: str
) -> None:
    """Without a reload, the overview counts a run as it starts and as it fails, and lists
    the failure with its error."""
    page = admin_page(browser, server, "root", OVERVIEW)
    expect(page.locator("#weft-live")).to_have_text("live")
    expect(page.locator(count("running"))).to_have_text("0")
    expect(page.locator(outcome("failed"))).to_have_text("0")
    failing = start(gated, {"fail": True})  # running until the page has shown it so
    expect(page.locator(count("running"))).to_have_text("1")
    open_gate(failing.pk)
    expect(page.locator(outcome("failed"))).to_have_text("1")
    expect(page.locator(count("running"))).to_have_text("0")
    expect(page.locator("#weft-failures")).to_contain_text("the gate opened onto a failure")
    start(broken)
    expect(page.locator(outcome("failed"))).to_have_text("2")
    expect(page.locator("#weft-failures")).to_contain_text("broken has no rows to work on")


def test_console_browser_run_page_follows_output_then_aborts_and_retries(
    browser: Browser, server: str
) -> None:
    """The terminal grows with the run's output, in colour, keeping its tail in view; Abort
    stops the run; Retry starts a new one with the same args, which runs too."""
    run = start(build, {"steps": 2000, "interval": 0.02})
    page = admin_page(browser, server, "root", f"/admin/django_weft/run/{run.pk}/change/")
    terminal = page.locator("#weft-terminal")
    expect(terminal).to_contain_text("step 5")
    expect(page.locator("#weft-run-phase")).to_have_text("running")
    expect(terminal).to_contain_text("step 150")
    expect(terminal.locator("span.weft-fg-2").first).to_have_text("✔")
    at_tail = (
        "(t) => t.scrollHeight > t.clientHeight"
        " && t.scrollHeight - t.scrollTop - t.clientHeight < 30"
    )
    assert terminal.evaluate(at_tail), "the terminal follows the tail"
    page.click("button.weft-abort")
    expect(page.locator(".messagelist")).to_contain_text(f"Abort requested for run {run.pk}")
    expect(page.locator("#weft-run-phase")).to_have_text("aborted")
    assert Run.objects.get(pk=run.pk).status == RunStatus.ABORTED
    assert "step 2000" not in terminal.inner_text()

    page.click("button.weft-retry")
    expect(page.locator(".messagelist")).to_contain_text(f"Run {run.pk} retried as run")
    retried = Run.objects.exclude(pk=run.pk).get()
    assert retried.args == run.args
    assert page.url.endswith(f"/admin/django_weft/run/{retried.pk}/change/")
    expect(page.locator("#weft-terminal")).to_contain_text("step 3")
    page.click("button.weft-abort")
    expect(page.locator("#weft-run-phase")).to_have_text("aborted")


def test_console_browser_run_list_updates_live(browser: Browser, server: str) -> None:
    """A run shows in the list as a worker claims it, and its phase changes as it finishes,
    without a reload; a run selected for an action holds the list still."""
    page = admin_page(browser, server, "root", "/admin/django_weft/run/")
    expect(page.locator("#weft-live")).to_have_text("live")
    run = start(gated, {})  # running until the list has shown it so
    row = page.locator("#result_list tbody tr", has_text=str(run.pk)[:8])
    expect(row.locator(".weft-phase")).to_have_text("running")
    open_gate(run.pk)
    expect(row.locator(".weft-phase")).to_have_text("done")
    row.locator("input.action-select").check()
    expect(page.locator(".action-counter")).to_contain_text("1 of 1 selected")
    second = start(build, {"steps": 1, "interval": 0})
    expect(page.locator(".weft-list-note")).to_contain_text("once no run or action is selected")
    assert page.locator("#result_list tbody tr", has_text=str(second.pk)[:8]).count() == 0
    row.locator("input.action-select").uncheck()
    page.select_option("select[name=action]", "")
    third = start(build, {"steps": 1, "interval": 0})
    expect(page.locator("#result_list tbody tr", has_text=str(third.pk)[:8])).to_have_count(1)
    page.locator("#result_list tbody tr", has_text=str(third.pk)[:8]).locator(
        "input.action-select"
    ).check()
    expect(page.locator(".action-counter")).to_contain_text("1 of 3 selected")


def test_console_browser_renders_ansi_as_the_server_does(browser: Browser, server: str) -> None:
    """The page's renderer (live updates) and the server's (first paint) agree exactly."""
    page = admin_page(browser, server, "root", OVERVIEW)
    rendered = page.evaluate("(samples) => samples.map(window.weftAnsi.toHtml)", SAMPLES)
    assert rendered == [to_html(sample) for sample in SAMPLES]


def test_console_browser_says_durations_as_the_server_does(browser: Browser, server: str) -> None:
    """The page's words for a length and a moment from now (the ticking ones) and the
    server's agree."""
    page = admin_page(browser, server, "root", OVERVIEW)
    lengths = [0, 0.4213, 9.999, 12.34, 59.96, 185, 3599.5, 7380, 86399, 90000, 1e6]
    said = page.evaluate("(lengths) => lengths.map(window.weftDuration)", lengths)
    assert said == [duration(timedelta(seconds=seconds)) for seconds in lengths]
    offsets = [0.4, -0.9, 42.7, -42.7, 2520, -185, 7380, -90000]
    said = page.evaluate("(offsets) => offsets.map(window.weftRelative)", offsets)
    assert said == [relative(seconds) for seconds in offsets]


def test_console_browser_a_coming_fire_counts_down(browser: Browser, server: str) -> None:
    """How far off a schedule's next due is moves on without a reload."""
    Schedule.objects.create(name="soon", job="tests.noop", every=timedelta(minutes=30))
    Schedule.objects.filter(name="soon").update(
        armed=True, next_due=timezone.now() + timedelta(minutes=20)
    )
    page = admin_page(browser, server, "root", "/admin/django_weft/schedule/")
    coming = page.locator(".field-next_due_at .weft-relative")
    shown = coming.inner_text()
    assert shown.startswith("in ")
    expect(coming).not_to_have_text(shown)


def test_console_browser_a_running_runs_length_ticks(browser: Browser, server: str) -> None:
    """A running run's length moves on without a reload, on its page (and its attempt's)
    and in the run list; a finished run's stays as it is."""
    running = start(build, {"steps": 10_000, "interval": 1})
    done = start(build, {"steps": 1, "interval": 0})
    wait_for(
        lambda: (
            Run.objects.filter(pk=running.pk, status=RunStatus.RUNNING).exists()
            and Run.objects.get(pk=done.pk).is_finished
        ),
        what="a running run and a finished one",
    )
    page = admin_page(browser, server, "root", f"{RUNS}{running.pk}/change/")
    for ticking in ("#weft-run-duration .weft-ticking", ".weft-attempt .weft-ticking"):
        shown = page.locator(ticking).inner_text()
        expect(page.locator(ticking)).not_to_have_text(shown)
    page.goto(f"{server}{RUNS}")
    row = page.locator("#result_list tr", has_text=str(running.pk)[:8])
    shown = row.locator(".field-length").inner_text()
    expect(row.locator(".field-length")).not_to_have_text(shown)
    finished = page.locator("#result_list tr", has_text=str(done.pk)[:8]).locator(".field-length")
    assert finished.locator(".weft-ticking").count() == 0


def test_console_browser_lists_fit_1280_px(browser: Browser, server: str) -> None:
    """At 1280 px nothing is wider than the window and run ids stay on one line."""
    Schedule.objects.create(
        name="nightly digest for the whole newsroom",
        job="content.digest",
        cron="0 7 * * *",
        timezone="America/Toronto",
    )
    Schedule.objects.create(name="every half hour", job="tests.noop", every=timedelta(minutes=30))
    for _ in range(3):
        start(build, {"steps": 1, "interval": 0})
    start(broken)
    waiting = start(build, {"steps": 10_000, "interval": 1})
    Run.objects.filter(pk=waiting.pk).update(queue="reports-for-the-editors")
    page = admin_page(browser, server, "root", "/admin/django_weft/run/")
    for path in (
        "/admin/django_weft/run/",
        OVERVIEW,
        f"/admin/django_weft/run/{waiting.pk}/change/",
    ):
        page.goto(f"{server}{path}")
        settled(page)
        assert overflowing(page) == [], path
    page.goto(f"{server}/admin/django_weft/run/")
    # In one turn of the page's script: the list may be redrawn live between two calls.
    lines = page.evaluate(
        "() => [...document.querySelectorAll('#result_list .field-short_id code')]"
        ".map((code) => code.getClientRects().length)"
    )
    assert lines == [1, 1, 1, 1, 1], "five runs, each id on one line"


def failed_run() -> Run:
    """A failed run of tests.noop, written finished so no worker claims it first."""
    ended = timezone.now() - timedelta(minutes=1)
    return Run.objects.create(
        job="tests.noop",
        status=RunStatus.FAILED,
        created_at=ended - timedelta(seconds=1),
        started_at=ended - timedelta(seconds=1),
        finished_at=ended,
    )


def test_console_browser_retries_the_selected_runs(browser: Browser, server: str) -> None:
    """Ticking two runs and choosing "Retry selected runs" retries those two and no other,
    says so, and a retry's page links to its run, whose page links back."""
    first, second, left = failed_run(), failed_run(), failed_run()
    page = admin_page(browser, server, "root", RUNS)
    for run in (first, second):
        page.locator("#result_list tbody tr", has=page.locator(f"code[title='{run.pk}']")).locator(
            "input[type=checkbox]"
        ).check()
    page.select_option("select[name=action]", "retry_action")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("Retried 2 runs.")
    retries = {run.retry_of_id: run for run in Run.objects.filter(retry_of__isnull=False)}
    assert set(retries) == {first.pk, second.pk}
    assert not Run.objects.filter(retry_of=left).exists()
    # The server's worker runs the retries (tests.noop): their pages stop changing once
    # they are done, so a click never lands on a row the live page is replacing.
    wait_for(
        lambda: (
            Run.objects.filter(pk__in=[r.pk for r in retries.values()], status="done").count() == 2
        ),
        what="both retries done",
    )
    page.goto(f"{server}{RUNS}{retries[first.pk].pk}/change/")
    link = page.locator("tr.weft-retry-of a")
    expect(link).to_contain_text(str(first.pk))
    link.click()
    expect(page.locator("tr.weft-retries")).to_contain_text(str(retries[first.pk].pk))

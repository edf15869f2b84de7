"""The schedule pages in a real browser (Debian's chromium, headless, via playwright),
against the example project served for real by ``runjobs --http``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browsers import new_page
from tests.example_server import example_server, run_in_example

pytestmark = [pytest.mark.slow, pytest.mark.any_database]

#: A long error without a space to break it: it must not widen the list.
LONG_ERROR = "SMTPServerDisconnected:" + "x" * 300 + " and then some more words " * 12


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("console") / "db.sqlite3"


@pytest.fixture(scope="module")
def server(database: Path) -> Iterator[str]:
    with example_server(database) as base:
        yield base


def admin_page(browser: Browser, server: str, path: str, width: int = 1400) -> Page:
    page = new_page(browser, viewport={"width": width, "height": 900})
    page.goto(f"{server}/admin/login/?next={path}")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "admin")
    page.click("input[type=submit]")
    return page


def open_digest(browser: Browser, server: str) -> Page:
    page = admin_page(browser, server, "/admin/django_weft/schedule/")
    page.click("text=nightly digest")
    expect(page.locator("ol.weft-next-fires li")).to_have_count(10)
    return page


def test_browser_next_fires_follow_the_cron_as_it_is_typed(browser: Browser, server: str) -> None:
    """Typing a new cron changes the listed fires and the plan in words, before any save."""
    page = open_digest(browser, server)
    fires = page.locator("ol.weft-next-fires li")
    assert all(" 07:00 E" in text for text in fires.all_inner_texts()), "07:00 Toronto"
    page.fill("input[name=cron]", "30 9 * * 1-5")
    expect(page.locator(".field-plan .readonly")).to_have_text("09:30 on weekdays, America/Toronto")
    expect(fires.first).to_contain_text(" 09:30 E")
    assert all(" 09:30 E" in text for text in fires.all_inner_texts())
    page.fill("input[name=timezone]", "Europe/Berlin")
    expect(page.locator(".field-plan .readonly")).to_have_text("09:30 on weekdays, Europe/Berlin")
    expect(fires.first).to_contain_text(" 09:30 CE")
    assert page.locator(".messagelist").count() == 0, "nothing was saved"


def test_browser_invalid_cron_shows_the_field_message_and_hides_fires(
    browser: Browser, server: str
) -> None:
    """An invalid cron: the cron field's own message, and no fires until it is fixed."""
    page = open_digest(browser, server)
    page.fill("input[name=cron]", "61 * * * *")
    errors = page.locator(".field-cron ul.errorlist")
    expect(errors).to_contain_text('minute "61" is out of range 0-59')
    expect(page.locator("ol.weft-next-fires li")).to_have_count(0)
    expect(page.locator(".weft-sch-fires")).to_contain_text("once the plan is valid")
    page.fill("input[name=cron]", "0 6 * * *")
    expect(page.locator("ol.weft-next-fires li")).to_have_count(10)
    expect(errors).to_have_count(0)


def test_browser_schedule_list_fits_1280_pixels(
    browser: Browser, server: str, database: Path
) -> None:
    """At 1280 px the list shows every column with no element wider than the window,
    even with a long last error, and a one-off's date stays on one line."""
    run_in_example(
        database,
        "from django_weft.models import Schedule; "
        "Schedule.objects.filter(name='nightly digest').update("
        f"last_status='failed', last_error_type='SMTPServerDisconnected', "
        f"last_error_message={LONG_ERROR!r}, missed=3)",
    )
    page = admin_page(browser, server, "/admin/django_weft/schedule/", width=1280)
    expect(page.locator("#result_list")).to_contain_text("failed")
    results = page.locator("#changelist .results").bounding_box()
    assert results is not None
    for column in ("name", "plan", "next_due_at", "last_status", "last_error", "missed"):
        header = page.locator(f"#result_list th.column-{column}")
        expect(header).to_be_visible()
        box = header.bounding_box()
        assert box is not None
        assert box["x"] + box["width"] <= results["x"] + results["width"] + 0.5, column
    # The demo's one-offs: "once at 2026-12-06 20:55:37 UTC", never "2026-12-" / "06".
    dates = page.locator("#result_list td.field-plan .nowrap")
    expect(dates.first).to_be_visible()
    assert (
        dates.evaluate_all("(spans) => spans.map((span) => span.getClientRects().length)")
        == [1] * dates.count()
    )
    # The admin puts the table in a box that scrolls sideways: nothing may need it.
    scrolling = page.evaluate(
        """() => [...document.querySelectorAll("body *")]
            .filter((element) => element.scrollWidth > element.clientWidth + 1
                && ["auto", "scroll"].includes(getComputedStyle(element).overflowX))
            .map((element) => element.tagName + "." + element.className)"""
    )
    assert scrolling == []
    too_wide = page.evaluate(
        """() => [...document.querySelectorAll("body *")]
            .filter((element) => element.getBoundingClientRect().right > window.innerWidth + 0.5)
            .map((element) => element.tagName + "." + element.className)"""
    )
    assert too_wide == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    expect(page.locator("#result_list .weft-sch-error").first).to_have_attribute(
        "title", LONG_ERROR
    )


def test_browser_picking_a_job_brings_its_args_form(browser: Browser, server: str) -> None:
    """On the add page, picking a job swaps in an input per arg; saved, they are its args."""
    page = admin_page(browser, server, "/admin/django_weft/schedule/add/")
    expect(page.locator(".weft-sch-args textarea[name=args]")).to_be_visible()
    # The admin puts the focus in its first field once the page has rendered, which a busy
    # browser does after a text typed into another field has begun to go there.
    expect(page.locator("input[name=name]")).to_be_focused()
    page.fill("input[name=name]", "say hello")
    page.fill("input[name=job]", "content.remind")
    page.locator("input[name=job]").dispatch_event("change")
    text = page.locator("input[name='args.text']")
    expect(text).to_be_visible()
    text.fill("water the plants")
    page.fill("input[name=every]", "02:00:00")
    expect(page.locator(".field-plan .readonly")).to_have_text("every 2 hours")
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist")).to_contain_text("was added successfully")
    expect(page.locator("input[name='args.text']")).to_have_value("water the plants")


def test_browser_a_schedules_plan_and_preview_come_first_on_a_phone(
    browser: Browser, server: str
) -> None:
    """At 390 px the digest's first fires show without scrolling, right after its plan;
    every and at are folded under "Another kind of plan", and open on a click."""
    page = admin_page(browser, server, "/admin/django_weft/schedule/", width=390)
    page.click("text=nightly digest")
    first_fire = page.locator("ol.weft-next-fires li").first
    expect(first_fire).to_be_visible()
    box = first_fire.bounding_box()
    assert box is not None
    assert box["y"] + box["height"] <= 900, f"the first fire is below the fold: {box}"
    every = page.locator("input[name=every]")
    expect(every).to_be_hidden()
    page.click("summary:has-text('Another kind of plan')")
    expect(every).to_be_visible()

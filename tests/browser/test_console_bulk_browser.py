"""The run list's bulk retry in a real browser (Debian's chromium) on a real server.

Ticking runs and choosing "Retry selected runs" retries those runs and no other, says so
in a message, and the retried run's page links back to the run it retries.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import Browser, expect

from django_weft.models import Run, RunStatus
from tests.browsers import admin_page, console_server

pytestmark = pytest.mark.django_db(transaction=True)

RUNS = "/admin/django_weft/run/"


@pytest.fixture(scope="module", autouse=True)
def _orm_beside_playwright() -> Iterator[None]:
    """The test's own ORM calls run while playwright's sync API holds an event loop in
    this thread (Django's documented switch; the loop never touches the database)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture
def server(transactional_db: None) -> Iterator[str]:
    get_user_model().objects.create_superuser("root", "root@example.com", "root")
    with console_server() as base:
        yield base


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
    page.goto(f"{server}{RUNS}{retries[first.pk].pk}/change/")
    link = page.locator("tr.weft-retry-of a")
    expect(link).to_contain_text(str(first.pk))
    link.click()
    expect(page.locator("tr.weft-retries")).to_contain_text(str(retries[first.pk].pk))

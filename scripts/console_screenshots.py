"""Screenshots of the operator's console for docs/admin.md, at 1280 and 390 px, light
and dark.

    .venv/bin/python scripts/console_screenshots.py

Writes docs/images/console-overview.png, console-run.png and console-runs.png (1280 px,
light), each with its -dark, -390 and -390-dark twins. It makes
a throwaway SQLite database for the test project (tests/settings.py), starts a real
``runjobs --http`` on it (tests/browsers.py), lets its worker execute a few builds (one
fails, one keeps running, one waits in a paused queue), and photographs the pages in
Debian's chromium. The day's earlier history on the charts is written straight to the
database, as finished runs: a day of real runs would take a day.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"

sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
os.environ["WEFT_TEST_DATABASE_NAME"] = str(Path(tempfile.mkdtemp()) / "console.sqlite3")
# The test's own ORM calls run beside playwright's event loop, which never touches them.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from django.utils import timezone  # noqa: E402
from playwright.sync_api import Page, sync_playwright  # noqa: E402

from django_weft.models import PausedQueue, Run, RunStatus, Schedule  # noqa: E402
from django_weft.operations import start  # noqa: E402
from example_project.shell.jobs import shell  # noqa: E402
from tests.browsers import admin_page, chromium, console_server, photograph  # noqa: E402
from tests.jobs import broken, build, noop  # noqa: E402


def history(sitemap: Schedule) -> None:
    """A day of finished runs, a few an hour, some failed, on the charts' left."""
    now = timezone.now()
    for index in range(240):
        ago = timedelta(minutes=6 * index + 7)
        failed = index % 17 == 3
        run = start(broken if failed else noop)
        Run.objects.filter(pk=run.pk).update(
            schedule=None if failed else sitemap,
            status=RunStatus.FAILED if failed else RunStatus.DONE,
            attempt=1,
            created_at=now - ago - timedelta(seconds=3),
            started_at=now - ago - timedelta(seconds=2),
            finished_at=now - ago,
            error_type="RuntimeError" if failed else "",
            error_message="broken has no rows to work on" if failed else "",
        )


def schedules() -> Schedule:
    """The coming fires; the sitemap's is the schedule of the day's earlier runs."""
    Schedule.objects.create(
        name="nightly digest", job="content.digest", cron="0 7 * * *", timezone="America/Toronto"
    )
    Schedule.objects.create(
        name="hourly cleanup", job="content.cleanup", cron="15 * * * *", timezone="Europe/Paris"
    )
    return Schedule.objects.create(
        name="refresh the sitemap", job="tests.noop", every=timedelta(minutes=20)
    )


def wait_until(condition: object, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def main() -> None:
    call_command("migrate", verbosity=0)
    root = get_user_model().objects.create_superuser("root", "root@example.com", "root")
    history(schedules())
    PausedQueue.objects.create(queue="reports", paused_at=timezone.now())
    IMAGES.mkdir(parents=True, exist_ok=True)
    with console_server() as base, sync_playwright() as playwright:
        browser = chromium(playwright)
        for steps in (12, 30, 45):
            start(build, {"steps": steps, "interval": 0.01}, owner=root)
        start(shell, {"command": "make docs", "lines": 20}, owner=root)
        failing = start(build, {"steps": 35, "interval": 0.02, "fail": True}, owner=root)
        with transaction.atomic():
            waiting = start(build, {"steps": 5, "interval": 0.1})
            Run.objects.filter(pk=waiting.pk).update(queue="reports")
        running = start(build, {"steps": 100_000, "interval": 0.05}, owner=root)
        wait_until(
            lambda: Run.objects.get(pk=failing.pk).status == RunStatus.FAILED, "the failing build"
        )
        wait_until(
            lambda: Run.objects.get(pk=running.pk).status == RunStatus.RUNNING, "the long build"
        )
        time.sleep(3)  # a screenful of the long build's output

        def live(page: Page) -> None:
            page.wait_for_selector("#weft-live.weft-live-on")

        def listed(page: Page) -> None:
            page.wait_for_load_state("networkidle")

        page = admin_page(browser, base, "root", "/admin/django_weft/overview/")
        written = photograph(page, IMAGES / "console-overview.png", live)
        page.goto(f"{base}/admin/django_weft/run/{failing.pk}/change/")
        written += photograph(page, IMAGES / "console-run.png", live)
        page.goto(f"{base}/admin/django_weft/run/")
        written += photograph(page, IMAGES / "console-runs.png", listed, full_page=False)
        Run.objects.filter(pk=running.pk).update(abort_requested_at=timezone.now())
        browser.close()
    for path in written:
        print(path)


if __name__ == "__main__":
    main()

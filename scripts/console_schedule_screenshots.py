"""Screenshots of the schedule pages for docs/admin.md, at 1280 and 390 px, light and dark.

Serves the example project for real (``runjobs --http`` on a fresh SQLite file, with the
demo's schedules), signs in as the demo's admin in Debian's chromium and writes
``docs/images/console-schedule.png`` (the nightly digest's page, its cron being edited)
and ``docs/images/console-schedules.png`` (the list), each with its -dark, -390 and
-390-dark twins::

    .venv/bin/python scripts/console_schedule_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

from tests.browsers import chromium, photograph  # noqa: E402
from tests.example_server import example_server, run_in_example  # noqa: E402

IMAGES = ROOT / "docs" / "images"


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "db.sqlite3"
        with example_server(database) as base, sync_playwright() as playwright:
            browser = chromium(playwright)
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.goto(f"{base}/admin/login/?next=/admin/django_weft/schedule/")
            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", "admin")
            page.click("input[type=submit]")
            page.click("text=nightly digest")
            page.click("button[name=run-now]")
            expect(page.locator(".messagelist")).to_contain_text("Started run")
            run_in_example(
                database,
                "from django_weft.models import Schedule; "
                "Schedule.objects.filter(name='hourly cleanup').update(last_status='failed', "
                "last_error_type='OperationalError', last_error_message='could not connect "
                'to server: Connection refused. Is the server running on host "db" and '
                "accepting TCP/IP connections on port 5432?', missed=2)",
            )

            def edited(page: Page) -> None:
                """A new cron typed and not saved: the plan and the fires follow it."""
                page.fill("input[name=cron]", "30 6 * * 1-5")
                expect(page.locator(".field-plan .readonly")).to_have_text(
                    "06:30 on weekdays, America/Toronto"
                )
                page.wait_for_timeout(300)

            def listed(page: Page) -> None:
                expect(page.locator("#result_list")).to_contain_text("fired, done")

            written = photograph(page, IMAGES / "console-schedule.png", edited)
            page.goto(f"{base}/admin/django_weft/schedule/")
            written += photograph(page, IMAGES / "console-schedules.png", listed)
            browser.close()
    for path in written:
        print(path)


if __name__ == "__main__":
    main()

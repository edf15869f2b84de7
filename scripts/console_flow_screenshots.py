"""Screenshots of the console's flow pages for docs/admin.md, at 1280 and 390 px, light
and dark.

    .venv/bin/python scripts/console_flow_screenshots.py

Writes docs/images/console-workflow.png (a release whose end-to-end checks failed: the
graph in layers, the cancelled deploy, the announcement that ran anyway, *Retry step*)
console-group-step.png (an album whose group step had one of eight members fail) and
console-group.png (that step's group), each with its -dark, -390 and -390-dark twins. It
makes a throwaway SQLite database for the test project (tests/settings.py), starts a
real ``runjobs --http`` on it (tests/browsers.py), lets its worker run both workflows,
and photographs the pages in Debian's chromium.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"

sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
os.environ["WEFT_TEST_DATABASE_NAME"] = str(Path(tempfile.mkdtemp()) / "flows.sqlite3")
# The script's own ORM calls run beside playwright's event loop, which never touches them.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from playwright.sync_api import Page, sync_playwright  # noqa: E402

from django_weft.models import Workflow, WorkflowStatus  # noqa: E402
from django_weft.operations import start_workflow  # noqa: E402
from tests.browsers import admin_page, chromium, console_server, photograph  # noqa: E402


def ended(workflow: Workflow, timeout: float = 60) -> Workflow:
    deadline = time.monotonic() + timeout
    while Workflow.objects.get(pk=workflow.pk).status == WorkflowStatus.RUNNING:
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {workflow}")
        time.sleep(0.2)
    return Workflow.objects.get(pk=workflow.pk)


def main() -> None:
    call_command("migrate", verbosity=0)
    root = get_user_model().objects.create_superuser("root", "root@example.com", "root")
    IMAGES.mkdir(parents=True, exist_ok=True)
    with console_server() as base, sync_playwright() as playwright:
        browser = chromium(playwright)
        release = start_workflow("tests.release", {"ref": "v3.1", "flaky": ["e2e"]}, owner=root)
        album = start_workflow("tests.album", {"count": 8, "flaky": [5]}, owner=root)
        ended(release)
        group = ended(album).steps.get(name="squares").group_id

        def shown(page: Page) -> None:
            page.wait_for_load_state("networkidle")

        page = admin_page(
            browser, base, "root", f"/admin/django_weft/workflow/{release.pk}/change/"
        )
        written = photograph(page, IMAGES / "console-workflow.png", shown)
        page.goto(f"{base}/admin/django_weft/workflow/{album.pk}/change/")
        written += photograph(page, IMAGES / "console-group-step.png", shown)
        page.goto(f"{base}/admin/django_weft/group/{group}/change/")
        written += photograph(page, IMAGES / "console-group.png", shown)
        browser.close()
    for path in written:
        print(path)


if __name__ == "__main__":
    main()

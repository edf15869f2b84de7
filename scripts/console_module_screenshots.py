"""Screenshots of a stored module's pages for docs/admin.md, at 1280 and 390 px, light
and dark.

    .venv/bin/python scripts/console_module_screenshots.py

Writes docs/images/console-module.png (a module's page: the numbered source editor, the
grants (none registered here), its history, its latest runs and the sandbox's layers) and
console-module-revision.png (what its second revision changed), each with its -dark,
-390 and -390-dark twins. It makes a throwaway SQLite database for the test project
(tests/settings.py), starts a real ``runjobs --http`` on it (tests/browsers.py), lets
its worker run the module once, and photographs the pages in Debian's chromium.
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
os.environ["WEFT_TEST_DATABASE_NAME"] = str(Path(tempfile.mkdtemp()) / "modules.sqlite3")
# The script's own ORM calls run beside playwright's event loop, which never touches them.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from playwright.sync_api import Page, sync_playwright  # noqa: E402

from django_weft import operations  # noqa: E402
from django_weft.models import Module, Run  # noqa: E402
from django_weft.sandbox.modules import save_module  # noqa: E402
from tests.browsers import admin_page, chromium, console_server, photograph  # noqa: E402

FIRST = """def default():
    return "3 posts today"
"""

SECOND = '''def default(day=None):
    """The day's report: posts and comments, as the newsroom reads it each morning."""
    posts, comments = 3, 12
    return f"report for {day or 'today'}: {posts} posts, {comments} comments"
'''


def main() -> None:
    call_command("migrate", verbosity=0)
    root = get_user_model().objects.create_superuser("root", "root@example.com", "root")
    IMAGES.mkdir(parents=True, exist_ok=True)
    module = save_module(Module(name="report/daily", source=FIRST, owner=root))
    edited = Module.objects.get(pk=module.pk)
    edited.source = SECOND
    operations.save_module_for(root, edited)
    run = operations.start_for(
        root,
        operations.parse_start(
            root, {"job": "weft.module", "args": {"module": module.name, "args": ["2026-12-07"]}}
        ),
    )[0]
    with console_server() as base, sync_playwright() as playwright:
        browser = chromium(playwright)
        deadline = time.monotonic() + 60
        while not Run.objects.get(pk=run.pk).is_finished:
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {run}")
            time.sleep(0.2)

        def shown(page: Page) -> None:
            page.wait_for_load_state("networkidle")

        page = admin_page(browser, base, "root", f"/admin/django_weft/module/{module.pk}/change/")
        written = photograph(page, IMAGES / "console-module.png", shown)
        page.goto(f"{base}/admin/django_weft/module/{module.pk}/revisions/2/")
        written += photograph(page, IMAGES / "console-module-revision.png", shown)
        browser.close()
    for path in written:
        print(path)


if __name__ == "__main__":
    main()

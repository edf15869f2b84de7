"""Every console page passes axe-core's WCAG 2 A and AA rules (contrast 4.5:1 among them),
in light and dark mode, at 1280 and 390 px, in Debian's chromium on ``runjobs --http``.

axe-core comes from the npm registry into tests/browser/axe/ (``npm ci`` there, as
scripts/test.sh does); the test loads it into each page and prints every violation with
the nodes it found. The pages are those :mod:`django_weft.admin` registers, each list and
a page of one of its rows, plus the forms that add a schedule and a module; a test checks
that no registered page is left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import Browser

from django_weft.models import AuditRecord, Document, Module, Run, Schedule, WorkerProcess
from django_weft.operations import pause_queue_for, start
from tests.browsers import admin_page, console_server
from tests.jobs import broken, build
from tests.processes import wait_for

AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
#: The rules of WCAG 2.0, 2.1 and 2.2 at levels A and AA.
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
WIDTHS = (1280, 390)
SCHEMES = ("light", "dark")

RUN_AXE = """(tags) => axe.run(document, {runOnly: {type: "tag", values: tags}})
  .then((results) => results.violations.map((violation) => ({
    id: violation.id,
    help: violation.help,
    nodes: violation.nodes.map((node) => `${node.target.join(" ")}: ${node.failureSummary}`),
  })))"""


@dataclass(frozen=True)
class Console:
    """The server, and one row of each kind for the pages of a row."""

    base: str
    rows: dict[str, str]


pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module", autouse=True)
def _orm_beside_playwright() -> Iterator[None]:
    """The test's ORM calls run while playwright's sync API holds an event loop in this
    thread (see tests/browser/test_console_browser.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield


@pytest.fixture
def console(transactional_db: None) -> Iterator[Console]:
    """A server with a row of every kind: a superuser, a schedule, a module, runs that
    finished (done and failed) and one that runs, a paused queue on record."""
    assert AXE.exists(), f"axe-core is missing: run `npm ci` in {AXE.parents[2]}"
    root = get_user_model().objects.create_superuser("root", "root@example.com", "root")
    schedule = Schedule.objects.create(
        name="nightly digest", job="content.digest", cron="0 7 * * *", timezone="UTC"
    )
    module = Module.objects.create(name="greeter", source="def hello(name):\n    return name\n")
    with console_server() as base:
        done = start(build, {"steps": 1, "interval": 0})
        start(broken)
        start(build, {"steps": 10_000, "interval": 1})
        wait_for(
            lambda: (
                Run.objects.filter(status="running").exists()
                and Run.objects.finished().count() == 2
            ),
            what="two finished runs and a running one",
        )
        pause_queue_for(root, "reports")
        rows = {
            "schedule": str(schedule.pk),
            "run": str(done.pk),
            "module": str(module.pk),
            "document": str(Document.objects.get(run=done).pk),
            "workerprocess": str(WorkerProcess.objects.get().pk),
            "auditrecord": str(AuditRecord.objects.get().pk),
        }
        yield Console(base, rows)


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
    ]
    return found


def address(console: Console, url_name: str) -> str:
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
            page.wait_for_load_state("networkidle")
            page.add_script_tag(path=str(AXE))
            for violation in page.evaluate(RUN_AXE, WCAG_AA):
                found.append(f"{width} px, {scheme}: {violation['id']} ({violation['help']})")
                found += [f"    {node}" for node in violation["nodes"]]
    assert not found, f"{title} ({path}):\n" + "\n".join(found)

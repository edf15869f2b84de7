"""The example's shell page in a real browser while its Redis goes away and comes back.

The example runs as one ``runjobs --http`` process on its own SQLite file, with its
channel layer on the throwaway Redis; the page's client is ``live.js``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.test_browser import run_row, signed_in
from tests.example_server import example_server
from tests.faults.servers import RedisServer
from tests.processes import wait_for

PAUSED = "live updates paused"


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return tmp_path / "db.sqlite3"


@pytest.fixture
def server(database: Path, redis: RedisServer) -> Iterator[str]:
    with example_server(database, extra_env={"WEFT_EXAMPLE_REDIS": redis.url}) as base:
        yield base


def status_of(database: Path, command: str) -> str | None:
    """The status of the example's run of ``command``, read from its SQLite file."""
    with closing(sqlite3.connect(database)) as connection:
        row = connection.execute(
            "SELECT status FROM django_weft_run WHERE args LIKE ?", (f'%"{command}"%',)
        ).fetchone()
    return row[0] if row else None


def test_example_page_pauses_and_resumes_with_redis(
    browser: Browser, server: str, database: Path, redis: RedisServer
) -> None:
    """The page says it is paused, still starts a run, and shows it done once Redis is back."""
    page = signed_in(browser, server, "owner")
    expect(page.locator("#live")).to_have_text("")

    redis.stop()
    expect(page.locator("#live")).to_contain_text(PAUSED)
    page.fill("input[name=command]", "make outage")
    page.fill("input[name=lines]", "3")
    page.click("#run-form button[type=submit]")
    row = run_row(page, "make outage")
    expect(row).to_be_visible()  # the start was answered
    wait_for(lambda: status_of(database, "make outage") == "done", 30, "the run to finish")
    expect(row.locator(".phase")).not_to_have_text("done")  # no change came meanwhile

    redis.start()
    expect(page.locator("#live")).to_have_text("")
    expect(row.locator(".phase")).to_have_text("done")  # from the fresh snapshot
    expect(row.locator("pre.output")).to_contain_text("line 3")

"""docs/api.md's ``curl`` lines work as written, in order, against the running example.

The example project is served for real (``runjobs --http`` on its own SQLite file, its
demo loaded, as ``bash scripts/example.sh`` does); each ``curl`` of the page runs as a
subprocess with the page's URL, headers and body, only the port changed, and with
``--write-out`` to learn the status. Every address the page names lives under the one
prefix the example mounts the API at.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.example_server import example_server
from tests.patience import EVENTUALLY
from tests.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.any_database]

ROOT = Path(__file__).resolve().parent.parent.parent
API_DOC = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
PREFIX = "api/"


def curls(page: str = API_DOC) -> list[list[str]]:
    """Each ``curl`` of a page of the docs (docs/api.md), as argv, in the page's order."""
    blocks = re.findall(r"^```sh\n(.*?)^```$", page, re.M | re.S)
    lines = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("curl ")]


def tutorial_curl() -> list[str]:
    """The ``curl`` of docs/tutorial.md that starts a run of ``shell.run``."""
    tutorial = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    (found,) = [argv for argv in curls(tutorial) if "shell.run" in " ".join(argv)]
    return found


def send(argv: list[str], base: str) -> tuple[int, dict[str, object]]:
    """Run one ``curl`` against ``base``: its status and its JSON body."""
    argv = [arg.replace("http://127.0.0.1:8000", base) for arg in argv]
    done = subprocess.run(
        [*argv, "--silent", "--show-error", "--write-out", "\n%{http_code}"],
        capture_output=True,
        text=True,
        timeout=EVENTUALLY,
        check=True,
    )
    body, _, status = done.stdout.rpartition("\n")
    return int(status), json.loads(body)


def test_api_doc_names_one_prefix() -> None:
    """Every address in docs/api.md, in its tables, its urls.py and its ``curl`` lines,
    is under ``api/``, the prefix the example project mounts the API at."""
    addresses = re.findall(r"`(api/[^`]*)`|\"(api/[^\"]*)\"|:8000/([^\s`]*)", API_DOC)
    named = [next(part for part in found if part) for found in addresses]
    assert named, "docs/api.md names no address"
    assert all(address.startswith(PREFIX) for address in named), named
    assert "api/weft" not in API_DOC


def test_api_doc_curls_work_as_written_in_order(tmp_path: Path) -> None:
    """The run ``curl`` answers 409 while the tutorial's run of the job is unfinished,
    with the words the page quotes; once that run is aborted, 201 with a run of the job
    it names, and again 200 with the same run (its idempotency key); the bulk ``curl``
    lines answer 200 with what they did and refused (the example id names no run); the
    signal ``curl`` reaches its endpoint, which finds no run of the example id (404); the
    schedule ``curl`` answers 201 with the schedule, owned by the caller."""
    start_run, bulk_retry, bulk_delete, signal, create_schedule = curls()
    with example_server(tmp_path / "example.sqlite3") as base:
        status, tutorial = send(tutorial_curl(), base)
        assert status == 201, tutorial
        status, refused = send(start_run, base)
        assert (status, refused["code"]) == (409, "concurrency_limit"), refused
        assert json.dumps(refused["detail"]) in " ".join(API_DOC.split())
        address = f"http://127.0.0.1:8000/api/runs/{tutorial['id']}/"
        status, _ = send(["curl", "-u", "owner:owner", "-X", "POST", f"{address}abort/"], base)
        assert status == 202
        wait_for(
            lambda: send(["curl", "-u", "owner:owner", address], base)[1]["finished_at"],
            what="the tutorial's run to end aborted",
        )
        status, run = send(start_run, base)
        assert status == 201, run
        assert (run["job"], run["owner"]) == ("shell.run", "owner"), run
        again, same = send(start_run, base)
        assert again == 200, same
        assert same["id"] == run["id"]
        status, retried = send(bulk_retry, base)
        assert (status, retried["action"]) == (200, "retry"), retried
        status, deleted = send(bulk_delete, base)
        assert status == 200, deleted
        assert (deleted["done"], deleted["refused"]) == (0, 1), deleted
        assert set(deleted["reasons"]) == {"not_found"}, deleted
        status, answer = send(signal, base)
        assert status == 404, answer
        status, schedule = send(create_schedule, base)
        assert status == 201, schedule
        asked = json.loads(create_schedule[create_schedule.index("-d") + 1])
        assert {key: schedule[key] for key in asked} == asked
        assert schedule["owner"] == "admin", schedule

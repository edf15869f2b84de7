"""The operators' endpoints served by real ``runjobs --http`` processes: the metrics
the worker counted, its liveness from its own loop, its readiness through a database
that is not migrated yet or not there at all."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from django_weft.models import Run, RunStatus
from django_weft.operations import start
from tests.example_server import free_port
from tests.observe.conftest import LIVE, METRICS, READY, samples, value
from tests.processes import ROOT, child_env, port_is_open, runjobs, wait_for

pytestmark = pytest.mark.slow


def get(base: str, path: str, **headers: str) -> tuple[int, bytes]:
    """GET ``base + path``: the status and the body, whatever the status."""
    request = urllib.request.Request(base + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def health(base: str, path: str) -> tuple[int, dict[str, Any]]:
    status, body = get(base, path)
    return status, json.loads(body)


@contextmanager
def serving(extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """``runjobs --http`` on a free port until the block ends; its base URL."""
    port = free_port()
    process = runjobs("--http", f"127.0.0.1:{port}", "--shutdown-grace", "2", extra_env=extra_env)
    try:
        wait_for(lambda: port_is_open(port) or process.poll() is not None, what="runjobs --http")
        assert process.poll() is None, process.finish()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stop()


@pytest.mark.django_db(transaction=True)
def test_runjobs_http_serves_its_own_counts_and_health() -> None:
    """A worker that ran two runs done and one failed says so in its metrics, and is
    ready and alive, its liveness read from its worker loop."""
    runs = [start("tests.noop"), start("tests.noop"), start("tests.broken")]
    with serving() as base:
        wait_for(
            lambda: not Run.objects.filter(pk__in=[run.pk for run in runs]).unfinished().exists(),
            what="the runs to finish",
        )
        status, body = get(base, METRICS, Authorization=f"Bearer {settings.WEFT_METRICS_TOKEN}")
        assert status == 200, body
        scraped = samples(body.decode())
        assert value(scraped, "weft_runs_finished_total", job="tests.noop", status="done") == 2
        assert value(scraped, "weft_runs_finished_total", job="tests.broken", status="failed") == 1
        assert value(scraped, "weft_workers_live") == 1
        assert value(scraped, "weft_outage_ongoing") == 0
        assert get(base, METRICS)[0] == 401
        assert health(base, READY) == (
            200,
            {
                "status": "ok",
                "checks": {
                    "database:default": {"ok": True},
                    "migrations": {"ok": True},
                    "channel_layer": {"ok": True},
                },
            },
        )
        assert health(base, LIVE) == (
            200,
            {"status": "ok", "checks": {"worker_loop": {"ok": True}}},
        )
    assert Run.objects.filter(status=RunStatus.DONE).count() == 2


def test_runjobs_http_is_alive_but_not_ready_until_migrated(tmp_path: Path) -> None:
    """On a database with no tables the worker waits (its loop turning: alive) and the
    readiness says the migrations are missing; once ``migrate`` ran, it is ready."""
    empty = {"WEFT_TEST_DATABASE": "sqlite", "WEFT_TEST_DATABASE_NAME": str(tmp_path / "new.db")}
    with serving(empty) as base:
        wait_for(lambda: health(base, LIVE)[1]["checks"] != {}, what="the worker loop to turn")
        status, body = health(base, READY)
        assert status == 503
        assert body["checks"]["database:default"] == {"ok": True}
        assert body["checks"]["migrations"]["ok"] is False
        assert body["checks"]["migrations"]["detail"].endswith(
            "migration(s) not applied; run manage.py migrate"
        )
        assert health(base, LIVE) == (
            200,
            {"status": "ok", "checks": {"worker_loop": {"ok": True}}},
        )
        subprocess.run(
            [sys.executable, "-m", "django", "migrate", "--no-input", "-v0"],
            cwd=ROOT,
            env=child_env(empty),
            check=True,
            capture_output=True,
        )
        assert health(base, READY)[0] == 200


def test_runjobs_http_is_alive_but_not_ready_without_its_database() -> None:
    """A PostgreSQL nobody listens at: unready (the database unreachable, so the
    migrations unknown), yet alive, as the worker waits out the outage."""
    gone = {"WEFT_TEST_DATABASE": "postgres", "WEFT_TEST_PG_PORT": "1"}
    with serving(gone) as base:
        wait_for(lambda: health(base, LIVE)[1]["checks"] != {}, what="the worker loop to turn")
        status, body = health(base, READY)
        assert status == 503
        assert body["checks"]["database:default"] == {
            "ok": False,
            "detail": "unreachable (OperationalError)",
        }
        assert body["checks"]["migrations"] == {
            "ok": False,
            "detail": "the default database is unreachable",
        }
        assert health(base, LIVE)[0] == 200

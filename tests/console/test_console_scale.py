"""The console and the API at scale (issue 20): with many finished runs stored, the
overview and the run lists never count the run table whole, and on PostgreSQL no query
they make reads it by a sequential scan (each is planned with ``EXPLAIN`` on enough rows
that the planner would pick one where no index serves). No timing: the figures at ten
million runs are bench/console_scale.py's, in docs/benchmarks.md."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from pytest_django import DjangoDbBlocker

from django_weft.engine.history.tallying import tally
from django_weft.models import Run, RunStatus, WorkerProcess
from tests.databases import shared_rows

pytestmark = pytest.mark.django_db

#: Enough rows that PostgreSQL's planner would pick a sequential scan wherever no index
#: serves the query. SQLite plans nothing here (only its queries' text is read, and its
#: counts are exact), so it gets a tenth of them.
RUNS = 30_000 if connection.vendor == "postgresql" else 3_000
STATUSES = [RunStatus.DONE] * 20 + [RunStatus.FAILED, RunStatus.ABORTED, RunStatus.LOST]
WHOLE_COUNT = re.compile(r'COUNT\(\*\).*FROM "django_weft_run"(?! *WHERE)', re.I | re.S)
DISTINCT_RUNS = re.compile(r'SELECT DISTINCT .*FROM "django_weft_run"[ )]', re.I | re.S)
PAGES = (
    "/admin/django_weft/overview/",
    "/admin/django_weft/overview/?range=30d&split=job",
    "/admin/django_weft/overview/live/?range=7d&split=queue",
    "/admin/django_weft/run/",
    "/admin/django_weft/run/?status__exact=done",
    "/admin/django_weft/run/?status__exact=lost",
    "/admin/django_weft/run/?job__exact=tests.job3",
    "/admin/django_weft/run/?queue__exact=cpu",
    "/api/weft/runs/",
    "/api/weft/runs/?status=failed&job=tests.job3",
)


@pytest.fixture(scope="module")
def many_runs(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> Iterator[None]:
    """Thirty thousand finished runs and a running one, tallied: written once for the
    module's tests, each of which runs in a savepoint of their transaction."""
    with shared_rows(django_db_blocker):
        write_many_runs()
        yield


def write_many_runs() -> None:
    now = timezone.now()
    Run.objects.bulk_create(
        [
            Run(
                job=f"tests.job{index % 10}",
                queue=("default", "cpu")[index % 2],
                status=STATUSES[index % len(STATUSES)],
                # Over the last 36 hours: the history has few chunks to count.
                created_at=now - timedelta(seconds=index * 4),
                started_at=now - timedelta(seconds=index * 4),
                finished_at=now - timedelta(seconds=index * 4 - 3),
            )
            for index in range(RUNS)
        ],
        batch_size=5000,
    )
    worker = WorkerProcess.objects.create(hostname="w", pid=1, started_at=now, last_beat=now)
    running = Run.objects.create(job="tests.noop", created_at=now)
    Run.objects.filter(pk=running.pk).update(status=RunStatus.RUNNING, worker=worker)
    while tally(now):
        pass
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def queries_of(path: str) -> list[str]:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.com", "pw"))
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, path
    get_user_model().objects.filter(username="root").delete()
    return [query["sql"] for query in captured.captured_queries]


def plan(sql: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.usefixtures("many_runs")
def test_pages_never_count_or_scan_the_run_table() -> None:
    """No page lists distinct values of the run table; on PostgreSQL none counts it whole
    or scans it (SQLite has no estimate: its lists count, as the embedded default may)."""
    for path in PAGES:
        queries = queries_of(path)
        assert queries, path
        for sql in queries:
            assert not DISTINCT_RUNS.search(sql), (path, sql)
        if connection.vendor != "postgresql":
            continue
        for sql in queries:
            assert not WHOLE_COUNT.search(sql), (path, sql)
            if '"django_weft_run"' in sql and sql.lstrip().upper().startswith("SELECT"):
                found = plan(sql)
                assert "Seq Scan on django_weft_run " not in found + " ", (path, sql, found)


@pytest.mark.usefixtures("many_runs")
def test_the_run_lists_count_is_estimated_past_the_threshold() -> None:
    """The lists still say how many runs they hold: exactly on SQLite, about on PostgreSQL."""
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "r@example.com", "pw"))
    count = client.get("/api/weft/runs/").json()["count"]
    if connection.vendor == "postgresql":
        assert abs(count - (RUNS + 1)) < RUNS / 5
    else:
        assert count == RUNS + 1
    assert client.get("/api/weft/runs/?status=running").json()["count"] == 1
    page: Any = client.get("/admin/django_weft/run/?status__exact=running")
    assert page.context["cl"].result_count == 1

"""The gauges' queries walk indexes: their cost follows the unfinished runs and the live
workers, never the finished runs (10,000,000 of them must not slow a scrape).

On PostgreSQL the plan is read with sequential scans priced out (``enable_seqscan =
off``): with a handful of rows the planner would rightly scan the table, but a query no
index can serve still gets a ``Seq Scan`` then. On SQLite the plan says ``SEARCH ...
USING INDEX`` rather than ``SCAN`` of the table.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.db.models import QuerySet

from django_weft.models import Run, RunStatus, WorkerProcess
from django_weft.observe import gauges

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 7, 11, 0, tzinfo=UTC)


def plan(queryset: QuerySet[object]) -> str:
    """The database's plan for ``queryset``."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_seqscan = off")
        return queryset.explain()


def assert_walks_an_index(queryset: QuerySet[object], table: str) -> None:
    explained = plan(queryset)
    if connection.vendor == "postgresql":
        assert f"Seq Scan on {table}" not in explained, explained
        assert "Index" in explained, explained
    else:
        assert f"SCAN {table}" not in explained.replace("USING INDEX", ""), explained
        assert re.search(r"USING (COVERING )?INDEX", explained), explained


@pytest.mark.parametrize(
    "queryset",
    [
        pytest.param(lambda: gauges.queued_by_queue(NOW), id="queued by queue"),
        pytest.param(lambda: gauges.runs_by_job(RunStatus.RUNNING), id="running by job"),
        pytest.param(lambda: gauges.runs_by_job(RunStatus.WAITING), id="waiting by job"),
    ],
)
def test_gauge_query_of_runs_walks_an_index(queryset: object) -> None:
    """Depth, oldest wait, running and waiting runs read only the index entries of
    unfinished runs."""
    assert callable(queryset)
    assert_walks_an_index(queryset(), Run._meta.db_table)


def test_gauge_query_of_live_workers_walks_an_index() -> None:
    """Live workers are counted through ``weft_worker_alive`` (workers not stopped)."""
    assert_walks_an_index(gauges.live_workers(NOW), WorkerProcess._meta.db_table)

"""The claim: one statement, at most the limit, by priority then age, deployed jobs only."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_weft.engine.runs.claiming import claim, deployed_pairs
from django_weft.jobs.registry import registry
from django_weft.models import Run, RunStatus, WorkerProcess
from django_weft.operations import start
from django_weft.testing import Rehearsal

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def process() -> WorkerProcess:
    now = timezone.now()
    return WorkerProcess.objects.create(hostname="h", pid=1, started_at=now, last_beat=now)


def deployed() -> tuple[tuple[str, int], ...]:
    return deployed_pairs(registry)


def test_claim_takes_at_most_the_limit_in_one_statement(process: WorkerProcess) -> None:
    """Ten queued, a limit of four: four claimed, in one statement, none read again."""
    runs = [start(registry.get("tests.noop")) for _ in range(10)]
    # The process learns there is no flow limit (an earlier test may have left it
    # thinking there were): from then on a claim is one statement.
    first = claim(deployed(), limit=1, worker=process, now=timezone.now(), queues=None)
    with CaptureQueriesContext(connection) as queries:
        claimed = claim(deployed(), limit=4, worker=process, now=timezone.now(), queues=None)
    assert len(claimed) == 4
    assert len(queries) == 1, [q["sql"] for q in queries]
    assert [run.pk for run in [*first, *claimed]] == [run.pk for run in runs[:5]], "oldest first"
    assert Run.objects.filter(status=RunStatus.RUNNING, worker=process).count() == 5
    assert all(run.attempt == 1 and run.worker_id == process.pk for run in claimed)


def test_claim_by_priority_then_age(process: WorkerProcess) -> None:
    """Higher priority first (the job's or the start's), then the older run."""
    noop = registry.get("tests.noop")
    low = start(noop, priority=-5)
    plain = start(noop)
    urgent = start(noop, priority=50)
    also_urgent = start(noop, priority=50)
    claimed = claim(deployed(), limit=10, worker=process, now=timezone.now(), queues=None)
    assert [run.pk for run in claimed] == [urgent.pk, also_urgent.pk, plain.pk, low.pk]


@pytest.mark.parametrize("priority", [101, -101, 1.5, True])
def test_start_refuses_a_priority_out_of_range(priority: object) -> None:
    """A priority outside -100..100 is refused with a message naming it; nothing is written."""
    with pytest.raises(ValueError, match="priority must be a whole number from -100 to 100"):
        start(registry.get("tests.noop"), priority=priority)  # type: ignore[arg-type]
    assert not Run.objects.exists()


def test_claim_skips_blocked_runs_other_queues_and_waiting_retries(
    process: WorkerProcess,
) -> None:
    """Runs of other versions, other queues, or whose retry is not due are left queued."""
    now = timezone.now()
    Run.objects.create(job="tests.noop", job_version=9, created_at=now - timedelta(hours=1))
    Run.objects.create(job="tests.noop", queue="reports", created_at=now - timedelta(minutes=30))
    waiting = start(registry.get("tests.noop"))
    Run.objects.filter(pk=waiting.pk).update(retry_at=now + timedelta(minutes=1))
    ready = start(registry.get("tests.noop"))
    claimed = claim(deployed(), limit=10, worker=process, now=now, queues=["default"])
    assert [run.pk for run in claimed] == [ready.pk]
    later = claim(deployed(), limit=10, worker=process, now=now + timedelta(minutes=2), queues=None)
    assert sorted(str(run.pk) for run in later) == sorted(
        str(pk)
        for pk in Run.objects.filter(job_version=1, status=RunStatus.RUNNING)
        .exclude(pk=ready.pk)
        .values_list("pk", flat=True)
    )
    assert Run.objects.get(job_version=9).status == RunStatus.QUEUED


def test_claim_of_a_big_backlog_stays_one_statement_per_batch(process: WorkerProcess) -> None:
    """With a thousand queued, each claim of four is still one statement taking four."""
    noop = registry.get("tests.noop")
    Run.objects.bulk_create(
        Run(job=noop.name, created_at=timezone.now() - timedelta(seconds=n)) for n in range(1000)
    )
    for _ in range(3):
        with CaptureQueriesContext(connection) as queries:
            assert (
                len(claim(deployed(), limit=4, worker=process, now=timezone.now(), queues=None))
                == 4
            )
        assert len(queries) == 1
    assert Run.objects.filter(status=RunStatus.RUNNING).count() == 12


def test_claim_with_nothing_deployed_claims_nothing(process: WorkerProcess) -> None:
    """A worker whose code has none of the queued runs' jobs claims nothing."""
    start(registry.get("tests.noop"))
    assert claim((), limit=4, worker=process, now=timezone.now(), queues=None) == []


def test_claim_orders_equal_priorities_by_when_they_became_claimable(
    process: WorkerProcess,
) -> None:
    """A run deferred to 9:00 (a task's run_after) goes after one started at 8:30 and
    before one started at 9:05, though it was started first; one claim at a time, so
    the statement's order is what is tested, not the sort of a batch."""
    nine = timezone.now().replace(microsecond=0) - timedelta(hours=1)
    deferred = Run.objects.create(
        job="tests.noop",
        created_at=nine - timedelta(hours=1),
        run_after=nine,
        retry_at=nine,
    )
    half_past_eight = Run.objects.create(job="tests.noop", created_at=nine - timedelta(minutes=30))
    five_past_nine = Run.objects.create(job="tests.noop", created_at=nine + timedelta(minutes=5))
    now = timezone.now()
    one_by_one = [
        claim(deployed(), limit=1, worker=process, now=now, queues=None)[0].pk for _ in range(3)
    ]
    assert one_by_one == [half_past_eight.pk, deferred.pk, five_past_nine.pk]
    Run.objects.update(status=RunStatus.QUEUED)
    batch = claim(deployed(), limit=10, worker=process, now=now, queues=None)
    assert [run.pk for run in batch] == one_by_one


def test_claim_walks_the_claim_index_without_sorting(process: WorkerProcess) -> None:
    """With a backlog, the database plans the claim's pick as a walk of the partial index
    weft_run_claim in its order, with no sort of the queued runs (PostgreSQL, SQLite)."""
    noop = registry.get("tests.noop")
    now = timezone.now()
    Run.objects.bulk_create(
        Run(
            job=noop.name,
            priority=n % 3,
            created_at=now - timedelta(seconds=n),
            run_after=now - timedelta(seconds=n // 2) if n % 2 else None,
            status=RunStatus.QUEUED if n % 4 else RunStatus.DONE,
        )
        for n in range(5000)
    )
    statements: list[tuple[str, tuple[object, ...]]] = []

    def keep(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append((sql, tuple(params)))
        return execute(sql, params, many, context)

    if connection.vendor == "postgresql":
        # SQLite's plan must hold without statistics too: few projects run ANALYZE there.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(Run._meta.db_table)}")
    # The process learns there is no flow limit (an earlier test may have left some).
    claim(deployed(), limit=1, worker=process, now=now, queues=None)
    with connection.execute_wrapper(keep):
        claim(deployed(), limit=4, worker=process, now=now, queues=None)
    [(statement, params)] = statements
    explain = "EXPLAIN " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN "
    with connection.cursor() as cursor:
        cursor.execute(explain + statement, params)
        plan = "\n".join(" ".join(str(value) for value in row) for row in cursor.fetchall())
    assert "weft_run_claim" in plan, plan
    assert "Sort" not in plan, plan  # PostgreSQL's sort node
    assert "TEMP B-TREE" not in plan, plan  # SQLite's
    if connection.vendor == "sqlite":
        assert "(id=?)" in plan, plan  # the update finds the picked runs by id


def test_a_worker_logs_each_blocked_job_version_once(
    rehearsal: Rehearsal, caplog: pytest.LogCaptureFixture
) -> None:
    """Queued runs of a version this code does not define, or of a job it does not
    define, are logged once per job and version (looked for once a minute), however
    many runs and rounds: the one word a worker's log has of runs that wait for a
    deploy."""
    noop = registry.get("tests.noop")
    for _ in range(3):
        Run.objects.filter(pk=start(noop).pk).update(job_version=7)
    Run.objects.filter(pk=start(noop).pk).update(job="tests.renamed")
    with caplog.at_level(logging.WARNING, logger="django_weft.worker"):
        for _ in range(3):
            rehearsal.advance(timedelta(minutes=1))
    blocked = [record.getMessage() for record in caplog.records if "blocked" in record.getMessage()]
    assert sorted(blocked) == [
        "runs of tests.noop version 7 are queued and blocked: this code has version 1; "
        "they wait for a worker whose code defines that version",
        "runs of tests.renamed version 1 are queued and blocked: this code has no such job; "
        "they wait for a worker whose code defines that version",
    ]
    assert Run.objects.filter(status=RunStatus.QUEUED).count() == 4, "none was claimed"

"""Lost runs: runs whose worker is dead, or silent past their timeout, are finished
``lost`` (or retried) once.

Any worker may do this for any other, in two steps. First :func:`mark_dead` marks the
dead workers stopped, in one statement that checks each one's last sign of life as it
writes: a heartbeat that lands meanwhile wins (the statement waits for its row lock and
looks again), and a claim, which reads its worker's row ``FOR SHARE`` in the same
statement (:mod:`~django_weft.engine.runs.claiming`), either commits before the mark (and its
runs are lost with the others) or sees the row stopped and claims nothing. Then every
running run of a stopped (or vanished) worker is finished; the conditional finish makes
sure each lost attempt is recorded once, however many workers notice it at the same
time.

Dead means silent and, on PostgreSQL, lockless: no heartbeat since ``silent_since`` and
no session holding the worker's liveness lock (:mod:`~django_weft.engine.worker.liveness`),
with the server up for at least ``WEFT_LOST_AFTER`` seconds (a restart drops every lock,
and live workers need a moment to take theirs again). On SQLite, silence alone.

A worker that is alive by that rule may still be stuck: paused (SIGSTOP keeps its
session, and with it its lock), deadlocked, or its loop held by a job that holds the GIL.
It keeps its runs, but not past their timeouts: :func:`finish_overdue` finishes as lost,
with a ``Timeout`` error, each running run past its job's timeout and
``WEFT_TIMEOUT_GRACE`` whose worker is registered yet silent (no heartbeat since
``silent_since``), whatever its lock says. Its own worker would have given it up by then,
had its loop been turning (:mod:`~django_weft.engine.worker.timeouts`): the outcome is the one it
would have written, and its runs without a timeout, or not yet past it, are left to it.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from functools import cache

from django.db import OperationalError, connection
from django.db.models import Q

from django_weft.conf import weft_settings
from django_weft.engine.database import sql
from django_weft.engine.database.outages import gave_up_waiting
from django_weft.engine.outcomes.finishing import AttemptReport, record_attempt
from django_weft.engine.worker.liveness import HELD_KEYS_SQL, key_sql, uses_liveness_lock
from django_weft.engine.worker.timeouts import deadline
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus, WorkerProcess

logger = logging.getLogger("django_weft.worker")

WORKER_LOST = ErrorRecord("WorkerLost", "the worker running it stopped beating", "")


def mark_dead(*, now: datetime, silent_since: datetime) -> int:
    """Mark stopped, at ``now``, every worker dead by the rule above; how many it marked."""
    if not uses_liveness_lock():
        return WorkerProcess.objects.silent_since(silent_since).update(stopped_at=now)
    with connection.cursor() as cursor:
        cursor.execute(
            _mark_dead_sql(),
            [
                sql.prep(WorkerProcess, "stopped_at", now),
                sql.prep(WorkerProcess, "last_beat", silent_since),
                weft_settings.LOST_AFTER,
            ],
        )
        return int(cursor.rowcount)


@cache
def _mark_dead_sql() -> str:
    """The PostgreSQL statement of :func:`mark_dead`, built once."""

    def column(name: str) -> str:
        return sql.column(WorkerProcess, name)

    table = sql.table(WorkerProcess)
    key = key_sql(f"{table}.{column('id')}")
    return (
        f"UPDATE {table} SET {column('stopped_at')} = %s "
        f"WHERE {column('stopped_at')} IS NULL AND {column('last_beat')} < %s "
        "AND pg_postmaster_start_time() < now() - make_interval(secs => %s) "
        f"AND {key} NOT IN ({HELD_KEYS_SQL})"
    )


def finish_lost(*, now: datetime, silent_since: datetime, changes: Changes) -> int:
    """Mark the dead workers stopped, then finish as lost (or retry, as the job allows)
    every running run no live worker holds; returns how many attempts it ended.

    Those are the runs whose worker row says stopped, or is gone. A run whose row another
    transaction holds locked past ``WEFT_LOCK_TIMEOUT`` is left for the next pass.
    """
    mark_dead(now=now, silent_since=silent_since)
    lost = (
        Run.objects.filter(status=RunStatus.RUNNING)
        .filter(Q(worker__isnull=True) | Q(worker__stopped_at__isnull=False))
        .values_list("pk", "job", "worker_id", "attempt", "started_at")
    )
    reports = [_lost(*row, error=WORKER_LOST) for row in lost]
    return len(_record_lost(reports, now=now, changes=changes))


def finish_overdue(*, now: datetime, silent_since: datetime, changes: Changes) -> int:
    """Finish as lost with a ``Timeout`` error (or retry, as the job allows) every running
    run past its timeout and ``WEFT_TIMEOUT_GRACE`` whose worker is registered but has not
    beaten since ``silent_since``; returns how many attempts it ended.

    The timeout is the job's as deployed here, counted from the attempt's start
    (:func:`~django_weft.engine.worker.timeouts.deadline`): a run of a job not deployed here is
    left to a worker that deploys it. The worker is not marked stopped: it is alive, and
    keeps its other runs; what it reports for these later is discarded.
    """
    grace = timedelta(seconds=weft_settings.TIMEOUT_GRACE)
    silent = Run.objects.filter(
        status=RunStatus.RUNNING,
        worker__stopped_at__isnull=True,
        worker__last_beat__lt=silent_since,
    ).values_list(
        "pk", "job", "job_version", "worker_id", "attempt", "started_at", "worker__last_beat"
    )
    overdue = []
    for run_id, job, version, worker_id, attempt, started_at, last_beat in silent:
        limit = deadline(job, version, started_at)
        if limit is None or now < limit + grace:
            continue
        message = (
            f"the run passed its timeout and did not end within {grace.total_seconds():g}s"
            " more, while its worker was silent (no heartbeat for"
            f" {(now - last_beat).total_seconds():.1f}s); another worker finished it"
        )
        overdue.append(
            _lost(
                run_id,
                job,
                worker_id,
                attempt,
                started_at,
                error=ErrorRecord("Timeout", message, ""),
            )
        )
    recorded = _record_lost(overdue, now=now, changes=changes)
    for report in recorded:
        logger.warning("%s run %s: %s", report.job, report.run_id, report.error.message)
    return len(recorded)


def _lost(
    run_id: uuid.UUID,
    job: str,
    worker_id: uuid.UUID | None,
    attempt: int,
    started_at: datetime | None,
    *,
    error: ErrorRecord,
) -> AttemptReport:
    """The report of an attempt that another worker than its own ends as lost."""
    return AttemptReport(
        run_id=run_id,
        job=job,
        worker_id=worker_id,
        attempt=attempt,
        started_at=started_at,
        status=RunStatus.LOST,
        error=error,
    )


def _record_lost(
    reports: list[AttemptReport], *, now: datetime, changes: Changes
) -> list[AttemptReport]:
    """Record each report of a run ended by another worker than its own; the reports
    recorded (not those someone else recorded first). A run another transaction holds
    locked waits for the next reap."""
    ended = []
    for report in reports:
        try:
            recorded = record_attempt(report, now=now, changes=changes)
        except OperationalError as error:
            if not gave_up_waiting(error):
                raise
            logger.info("lost run %s is locked by another transaction; next reap", report.run_id)
            continue
        if recorded is not None:
            ended.append(report)
    return ended

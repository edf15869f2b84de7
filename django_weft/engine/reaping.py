"""Lost runs: runs whose worker is dead are finished ``lost`` (or retried) once.

Any worker may do this for any other, in two steps. First :func:`mark_dead` marks the
dead workers stopped, in one statement that checks each one's last sign of life as it
writes: a heartbeat that lands meanwhile wins (the statement waits for its row lock and
looks again), and a claim, which reads its worker's row ``FOR SHARE`` in the same
statement (:mod:`~django_weft.engine.claiming`), either commits before the mark (and its
runs are lost with the others) or sees the row stopped and claims nothing. Then every
running run of a stopped (or vanished) worker is finished; the conditional finish makes
sure each lost attempt is recorded once, however many workers notice it at the same
time.

Dead means silent and, on PostgreSQL, lockless: no heartbeat since ``silent_since`` and
no session holding the worker's liveness lock (:mod:`~django_weft.engine.liveness`),
with the server up for at least ``WEFT_LOST_AFTER`` seconds (a restart drops every lock,
and live workers need a moment to take theirs again). On SQLite, silence alone.
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import cache

from django.db import OperationalError, connection
from django.db.models import Q

from django_weft.conf import weft_settings
from django_weft.engine import sql
from django_weft.engine.finishing import AttemptReport, record_attempt
from django_weft.engine.liveness import HELD_KEYS_SQL, key_sql, uses_liveness_lock
from django_weft.engine.outages import gave_up_waiting
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
    ended = 0
    for run_id, job, worker_id, attempt, started_at in list(lost):
        report = AttemptReport(
            run_id=run_id,
            job=job,
            worker_id=worker_id,
            attempt=attempt,
            started_at=started_at,
            status=RunStatus.LOST,
            error=WORKER_LOST,
        )
        try:
            recorded = record_attempt(report, now=now, changes=changes)
        except OperationalError as error:
            if not gave_up_waiting(error):
                raise
            logger.info("lost run %s is locked by another transaction; next reap", run_id)
            continue
        if recorded is not None:
            ended += 1
    return ended

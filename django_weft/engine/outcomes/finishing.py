"""The finish step: a run's outcome, written in one transaction, by the run's owner only.

An attempt that ends reports an :class:`AttemptReport`. :func:`record_attempt` turns it
into either a retry (the run goes back to the queue, the attempt is kept as an
:class:`~django_weft.models.Attempt`) or the run's outcome (:func:`finish`, with the
job's finish hook (:mod:`~django_weft.engine.outcomes.hooks`), the schedule's last-run
record, the group's count and the workflow's next steps in the same transaction).

Every write here is conditional on who owns the run: a running run is finished only by
the worker that claimed it, for the attempt it claimed; a run no worker holds (queued or
waiting) only while it still is. The row count says who won, so an outcome is recorded once
however many workers try, and a worker that was declared dead cannot overwrite what
another recorded.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache, partial
from typing import TYPE_CHECKING, Any

from django.db import connection, transaction

from django_weft import tracing
from django_weft.engine.database import sql
from django_weft.engine.flows.groups import members_ended
from django_weft.engine.flows.workflows import CANCELLED, step_ended
from django_weft.engine.outcomes.hooks import run_finish_hook
from django_weft.engine.schedules.scheduler import record_on_schedule
from django_weft.jobs.output import output_in
from django_weft.jobs.registry import registry
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.live.changes import Changes
from django_weft.models import Attempt, Run, RunStatus, Schedule
from django_weft.models.run import UNCLAIMED
from django_weft.signals import run_finished, schedule_failed

if TYPE_CHECKING:
    pass

logger = logging.getLogger("django_weft.runs")

NO_ERROR = ErrorRecord("", "", "")


@dataclass(frozen=True)
class Claim:
    """Who holds a running run: the worker that claimed it, for which attempt.

    ``worker_id`` is ``None`` only for a running run whose worker row was deleted.
    """

    worker_id: uuid.UUID | None
    attempt: int


@dataclass(frozen=True)
class AttemptReport:
    """How one attempt of a claimed run ended, as its worker reports it.

    ``worker_id`` and ``attempt`` are those of the claim: only that worker's report for
    that attempt can finish the run. ``error_class`` is the exception type that ended it
    (``None`` when nothing raised), which a retry policy may refuse to retry.
    """

    run_id: uuid.UUID
    job: str
    worker_id: uuid.UUID | None
    attempt: int
    started_at: datetime | None
    status: RunStatus
    result: Any = None
    error: ErrorRecord = NO_ERROR
    error_class: type[BaseException] | None = field(default=None, compare=False)
    schedule_id: int | None = None
    #: The run as its worker claimed it, when the report comes from the worker executing
    #: it: a plain finish updates it and hands it to ``run_finished`` without a read.
    run: Run | None = field(default=None, compare=False, repr=False)
    #: For a ``waiting`` report (the attempt ended in a wait): when the run is claimable
    #: again, and the signal it waits for (see :mod:`~django_weft.engine.outcomes.suspending`).
    wake_at: datetime | None = None
    awaiting: str = ""

    @property
    def claim(self) -> Claim:
        return Claim(self.worker_id, self.attempt)


def is_plain(report: AttemptReport) -> bool:
    """Whether the outcome is the run's last word and nothing else is written with it.

    No finish hook, no schedule to carry it to, no workflow to go on with, no retry, not
    a wait: then the finish is one row of a conditional update that all of a round's
    plain finishes share (:func:`finish_plain`). A group's member is plain too: the
    round's members are counted once a group (:func:`~django_weft.engine.flows.groups.
    members_ended`).
    """
    if (
        report.run is None
        or report.schedule_id is not None
        or report.run.workflow_id is not None
        or report.status == RunStatus.WAITING
    ):
        return False
    job = registry.get(report.job) if report.job in registry else None
    return (
        job is not None
        and job.finish_hook is None
        and not job.retries(report.status, report.attempt, report.error_class)
    )


#: Reports one finish statement carries at most: 10 parameters each, well inside
#: SQLite's 32,766 and PostgreSQL's 65,535 parameters per statement.
FINISH_ROWS = 500

#: The fields a plain finish writes, then the claim it must still hold, in the order
#: of the ``VALUES`` rows of :func:`_plain_finish_sql`.
FINISHED_FIELDS = (
    "status",
    "finished_at",
    "result",
    "error_type",
    "error_class_path",
    "error_message",
    "error_traceback",
)
CLAIM_FIELDS = ("id", "worker", "attempt")


def finish_plain(reports: Sequence[AttemptReport], *, now: datetime, changes: Changes) -> int:
    """Record plain outcomes (see :func:`is_plain`) in one statement per
    :data:`FINISH_ROWS` reports, in one transaction.

    One ``UPDATE ... FROM (VALUES ...) RETURNING id`` on both databases: a round's
    finishes cost one round trip, not one each, and each row is still written only while
    the claim of its report holds it. Returns how many were recorded; a report whose run
    someone else finished is logged and dropped, as :func:`finish` does.
    """
    recorded: list[Run] = []
    # No savepoint: inside the worker's round transaction it would cost two round trips
    # per round for nothing, since an error here rolls the whole round back anyway.
    with (
        tracing.span("weft.finish", {"weft.runs": len(reports)}),
        transaction.atomic(savepoint=False),
        connection.cursor() as cursor,
    ):
        for start in range(0, len(reports), FINISH_ROWS):
            chunk = reports[start : start + FINISH_ROWS]
            values, params = sql.values_list(
                Run, FINISHED_FIELDS + CLAIM_FIELDS, (_finish_row(report, now) for report in chunk)
            )
            cursor.execute(_plain_finish_sql(connection.vendor, values), params)
            won = {Run._meta.pk.to_python(run_id) for (run_id,) in cursor.fetchall()}
            for report in chunk:
                if report.run_id not in won:
                    log_late(report.run_id, report.claim)
                    continue
                run = report.run
                assert run is not None
                run.status, run.finished_at, run.result = report.status, now, report.result
                run.error_type, run.error_message = report.error.type, report.error.message
                run.error_class_path = report.error.class_path
                run.error_traceback = report.error.traceback
                recorded.append(run)
                changes.run(run.pk)
        members_ended([run for run in recorded if run.group_id is not None], now, changes)
        transaction.on_commit(partial(_announce_all, recorded))
    for run in recorded:
        logger.debug("finished %s run %s: %s", run.job, run.pk, run.status)
    return len(recorded)


def _finish_row(report: AttemptReport, now: datetime) -> tuple[object, ...]:
    """A report's ``VALUES`` row: what it writes (:data:`FINISHED_FIELDS`), then whose
    claim it is (:data:`CLAIM_FIELDS`)."""
    error = report.error
    return (
        str(report.status),
        now,
        report.result,
        error.type,
        error.class_path,
        error.message,
        error.traceback,
        report.run_id,
        report.worker_id,
        report.attempt,
    )


@cache
def _plain_finish_sql(vendor: str, values: str) -> str:
    """``UPDATE run SET <outcome> FROM (<values>) WHERE <the claim holds it> RETURNING id``.

    ``values`` differs only by its number of rows, so each batch size is built once.
    """
    table = sql.table(Run)

    def column(name: str) -> str:
        return sql.column(Run, name)

    assignments = ", ".join(
        f"{column(name)} = v.column{number}" for number, name in enumerate(FINISHED_FIELDS, 1)
    )
    run_id, worker, attempt = (
        f"v.column{number}" for number in range(len(FINISHED_FIELDS) + 1, len(FINISHED_FIELDS) + 4)
    )
    return (
        f"UPDATE {table} SET {assignments} FROM ({values}) AS v "
        f"WHERE {table}.{column('id')} = {run_id} "
        f"AND {table}.{column('status')} = '{RunStatus.RUNNING}' "
        f"AND {table}.{column('worker')} = {worker} AND {table}.{column('attempt')} = {attempt} "
        f"RETURNING {table}.{column('id')}"
    )


def record_attempt(report: AttemptReport, *, now: datetime, changes: Changes) -> Run | None:
    """Record how an attempt ended: a retry if the job's policy allows one, else the outcome.

    Returns the run as recorded, or ``None`` when the report came too late (the run was
    finished or retried by someone else, e.g. as lost): then nothing is written.
    """
    job = registry.get(report.job) if report.job in registry else None
    if job is not None and job.retries(report.status, report.attempt, report.error_class):
        assert job.retry is not None
        delay = timedelta(seconds=job.retry.delay(report.attempt))
        return _retry(report, now=now, retry_at=now + delay, changes=changes)
    return finish(
        report.run_id,
        report.status,
        now=now,
        claim=report.claim,
        result=report.result,
        error=report.error,
        changes=changes,
    )


def _retry(
    report: AttemptReport, *, now: datetime, retry_at: datetime, changes: Changes
) -> Run | None:
    """Put the run back in the queue for its next attempt, keeping this one on record."""
    with _finish_span(report.run_id, report.status), transaction.atomic():
        won = owned(report.run_id, report.claim).update(
            status=RunStatus.QUEUED,
            worker=None,
            retry_at=retry_at,
            error_type=report.error.type,
            error_class_path=report.error.class_path,
            error_message=report.error.message,
            error_traceback=report.error.traceback,
        )
        if not won:
            log_late(report.run_id, report.claim)
            return None
        # The next attempt writes its output over the run's: this one's is kept here.
        state = Run.objects.filter(pk=report.run_id).values_list("state__data", flat=True)
        Attempt.objects.create(
            run_id=report.run_id,
            number=report.attempt,
            worker_id=report.worker_id,
            status=report.status,
            started_at=report.started_at,
            ended_at=now,
            error_type=report.error.type,
            error_class_path=report.error.class_path,
            error_message=report.error.message,
            error_traceback=report.error.traceback,
            output=output_in(state.first()) or "",
        )
        changes.run(report.run_id)
    logger.info(
        "%s run %s attempt %d ended %s; attempt %d at %s",
        report.job,
        report.run_id,
        report.attempt,
        report.status,
        report.attempt + 1,
        retry_at.isoformat(),
    )
    return Run.objects.filter(pk=report.run_id).first()


def owned(run_id: uuid.UUID, claim: Claim | None) -> Any:
    """The run, if ``claim`` holds it; without a claim, the run if no worker holds it
    (queued, or waiting)."""
    if claim is None:
        return Run.objects.filter(pk=run_id, status__in=UNCLAIMED)
    return Run.objects.filter(
        pk=run_id, status=RunStatus.RUNNING, worker_id=claim.worker_id, attempt=claim.attempt
    )


def log_late(run_id: uuid.UUID, claim: Claim | None) -> None:
    """Say why a write conditional on ``claim`` (see :func:`owned`) found no row."""
    if claim is None:
        # Finishing an unclaimed run (an abort) loses to a claim in the normal course.
        logger.debug("run %s was no longer queued or waiting", run_id)
        return
    current = Run.objects.filter(pk=run_id).values("status", "worker_id", "attempt").first()
    if current is None:
        logger.warning("outcome of run %s discarded: the run no longer exists", run_id)
    elif current["status"] != RunStatus.RUNNING and (current["worker_id"], current["attempt"]) == (
        claim.worker_id,
        claim.attempt,
    ):
        # A commit that failed on the way back had in fact gone through.
        logger.info("outcome of run %s was already recorded (%s)", run_id, current["status"])
    else:
        logger.warning(
            "late outcome of run %s (attempt %s) discarded: it is %s, attempt %s, elsewhere",
            run_id,
            claim.attempt,
            current["status"],
            current["attempt"],
        )


def finish(
    run_id: uuid.UUID,
    status: RunStatus,
    *,
    now: datetime,
    claim: Claim | None = None,
    result: Any = None,
    error: ErrorRecord = NO_ERROR,
    changes: Changes,
) -> Run | None:
    """Record the outcome in one transaction with the job's finish hook.

    With ``claim`` the run must be running under that claim; without, no worker may hold
    it (an abort of a run that is queued or waiting). The hook runs on the
    code deployed now; what it changes or starts commits with the outcome, and if it
    raises, none of it does and the run records the hook's failure, unless the database
    failed it (:func:`~django_weft.engine.database.outages.is_outage`): then the error ends the
    whole finish, to be tried again.
    Returns the finished run, or None when the run was not that caller's to finish.
    """
    with _finish_span(run_id, status), transaction.atomic():
        won = owned(run_id, claim).update(
            status=status,
            finished_at=now,
            result=result,
            error_type=error.type,
            error_class_path=error.class_path,
            error_message=error.message,
            error_traceback=error.traceback,
        )
        if not won:
            log_late(run_id, claim)
            return None
        run = Run.objects.select_related("state", "owner").get(pk=run_id)
        run_finish_hook(run, now, changes)
        if run.schedule_id is not None:
            record_on_schedule(run, now, changes)
        if run.group_id is not None:
            members_ended([run], now, changes)
        if run.workflow_id is not None:
            for cancel in step_ended(run, now=now, changes=changes):
                finish(
                    cancel.run_id,
                    RunStatus.ABORTED,
                    now=now,
                    error=ErrorRecord(CANCELLED, cancel.message, ""),
                    changes=changes,
                )
        changes.run(run.pk)
        transaction.on_commit(lambda: _announce(run))
    logger.debug("finished %s run %s: %s", run.job, run.pk, run.status)
    return run


def _finish_span(run_id: uuid.UUID, status: RunStatus) -> AbstractContextManager[tracing.Span]:
    """The ``weft.finish`` span of one run's outcome or retry (:mod:`django_weft.tracing`)."""
    return tracing.span("weft.finish", {"weft.run_id": str(run_id), "weft.status": str(status)})


def _announce_all(runs: list[Run]) -> None:
    for run in runs:
        _announce(run)


def _announce(run: Run) -> None:
    run_finished.send(sender=Run, run=run)
    if run.schedule is not None and run.status != RunStatus.DONE:
        schedule_failed.send(
            sender=Schedule,
            schedule=run.schedule,
            run=run,
            error_type=run.error_type or str(run.status),
            message=run.error_message or f"the run was {run.status}",
        )


def abort(run: Run, *, now: datetime, changes: Changes) -> bool:
    """Request an abort. A run no worker holds (queued, blocked or waiting) ends at once.

    Returns False when the run had already finished, or its abort was requested before.
    """
    if not run.record_abort_request(now):
        return False
    changes.run(run.pk)
    finish(run.pk, RunStatus.ABORTED, now=now, changes=changes)
    return True

"""The two transactions of a run: start (intent) and finish (outcome).

Between them the run executes outside any transaction in a worker (see
:mod:`django_weft.execution`). Everything that starts a run goes through
:func:`start_in_transaction`: schedules, the API, sockets, the admin, finish hooks.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from asgiref.sync import sync_to_async
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from django_weft import live
from django_weft.exceptions import (
    ConcurrencyLimitReached,
    IdempotencyKeyReused,
    InvalidArgs,
    StartRefused,
    UnknownJob,
)
from django_weft.jobs import Job, registry
from django_weft.models import Document, LastStatus, Run, RunStatus, Schedule, WorkerProcess
from django_weft.models.run import UNFINISHED
from django_weft.outcomes import FinishContext, Outcome
from django_weft.signals import run_finished, schedule_failed

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger("django_weft.runs")


def start(
    job: Job,
    args: Mapping[str, Any] | None = None,
    *,
    key: str | None = None,
    owner: AbstractBaseUser | None = None,
    now: datetime | None = None,
) -> Run:
    """Start a run of ``job`` in its own transaction and return it at once.

    Raises :class:`~django_weft.exceptions.InvalidArgs` for args that fail the job's
    serializer and :class:`~django_weft.exceptions.StartRefused` (concurrency limit,
    reused key); in both cases nothing is written. With ``key`` a resent start returns
    the run the first one made.
    """
    return start_or_get(job, args, key=key, owner=owner, now=now)[0]


def start_or_get(
    job: Job,
    args: Mapping[str, Any] | None = None,
    *,
    key: str | None = None,
    owner: AbstractBaseUser | None = None,
    now: datetime | None = None,
) -> tuple[Run, bool]:
    """Like :func:`start`, also saying whether this call created the run.

    False means ``key`` named a run an earlier start made (an HTTP API answers 200
    instead of 201 then).
    """
    with transaction.atomic():
        return _start(job, args, key=key, owner=owner, now=now)


astart = sync_to_async(start)


def start_in_transaction(
    job: Job,
    args: Mapping[str, Any] | None,
    *,
    key: str | None = None,
    owner: AbstractBaseUser | None = None,
    schedule: Schedule | None = None,
    due: datetime | None = None,
    now: datetime | None = None,
    validated: bool = False,
) -> Run:
    """The start step, inside the caller's transaction (a schedule's tick, a finish)."""
    return _start(
        job, args, key=key, owner=owner, schedule=schedule, due=due, now=now, validated=validated
    )[0]


def _start(
    job: Job,
    args: Mapping[str, Any] | None,
    *,
    key: str | None = None,
    owner: AbstractBaseUser | None = None,
    schedule: Schedule | None = None,
    due: datetime | None = None,
    now: datetime | None = None,
    validated: bool = False,
) -> tuple[Run, bool]:
    stored = dict(args or {}) if validated else job.validate_args(args)
    concurrency_key = ""
    if job.concurrency is not None:
        concurrency_key = (
            job.concurrency_key(stored, owner) if job.concurrency_key else None
        ) or ""
        _serialize_starts(job.name, concurrency_key)
    if key is not None and (existing := _run_for_key(job, key, stored)) is not None:
        return existing, False
    if job.concurrency is not None:
        unfinished = Run.objects.unfinished().filter(job=job.name, concurrency_key=concurrency_key)
        if unfinished.count() >= job.concurrency:
            raise ConcurrencyLimitReached(job.name, job.concurrency, concurrency_key or None)
    run = Run(
        id=uuid.uuid4(),
        job=job.name,
        job_version=job.version,
        args=stored,
        owner=cast(Any, owner),  # AUTH_USER_MODEL, whatever class the project swapped in
        schedule=schedule,
        due=due,
        idempotency_key=key,
        concurrency_key=concurrency_key,
        queue=job.queue,
        created_at=now or timezone.now(),
    )
    # Only a keyed start can lose an insert race it must survive (by returning the
    # winner), so only it pays for a savepoint; a schedule's fire has its own.
    try:
        with transaction.atomic() if key is not None else contextlib.nullcontext():
            if job.state is not None:
                run.state = Document.objects.create(
                    key=f"run:{run.id}",
                    schema=job.state.name,
                    version=job.state.version,
                    data=job.state.initial(),
                )
            run.save(force_insert=True)
    except IntegrityError:
        # Two starts with one key raced; the other insert won and is returned.
        if key is None or (existing := _run_for_key(job, key, stored)) is None:
            raise
        return existing, False
    live.run_changed(run.pk)
    logger.info("started %s run %s", job.name, run.pk)
    return run, True


def _run_for_key(job: Job, key: str, stored: dict[str, Any]) -> Run | None:
    existing = Run.objects.filter(job=job.name, idempotency_key=key).first()
    if existing is not None and existing.args != stored:
        raise IdempotencyKeyReused(job.name, key)
    return existing


def _serialize_starts(job: str, key: str) -> None:
    """Make concurrent starts of one job and key take turns until their commit.

    PostgreSQL gets a transaction-level advisory lock; SQLite serializes writing
    transactions itself (use ``"transaction_mode": "IMMEDIATE"``, check W001).
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"weft:{job}:{key}"])


def claim(
    jobs: Iterable[Job],
    *,
    limit: int,
    worker: WorkerProcess,
    now: datetime,
    queues: Iterable[str] | None,
) -> list[Run]:
    """Mark up to ``limit`` queued runs as running on ``worker`` and return them."""
    with transaction.atomic():
        queued = Run.objects.claimable(jobs, queues)
        if connection.features.has_select_for_update_skip_locked:
            queued = queued.select_for_update(skip_locked=True)
        ids = list(queued.values_list("pk", flat=True)[:limit])
        if not ids:
            return []
        Run.objects.filter(pk__in=ids, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING, worker=worker, started_at=now, attempt=F("attempt") + 1
        )
        claimed = list(
            Run.objects.filter(pk__in=ids, status=RunStatus.RUNNING, worker=worker)
            .select_related("state")
            .order_by("created_at")
        )
        for run in claimed:
            live.run_changed(run.pk)
        return claimed


def finish(
    run_id: uuid.UUID,
    status: RunStatus,
    *,
    now: datetime,
    result: Any = None,
    error_type: str = "",
    error_message: str = "",
    expected: Iterable[str] = UNFINISHED,
) -> Run | None:
    """Record the outcome in one transaction with the job's finish hook.

    The conditional update on the status makes finishing happen exactly once, however
    many workers try (a lost run is finished by whoever notices first). The hook runs
    on the code deployed now; what it changes or starts commits with the outcome, and
    if it raises, none of it does and the run records the hook's failure.
    Returns the finished run, or None when it had already finished.
    """
    with transaction.atomic():
        won = Run.objects.filter(pk=run_id, status__in=list(expected)).update(
            status=status,
            finished_at=now,
            result=result,
            error_type=error_type,
            error_message=error_message,
        )
        if not won:
            return None
        run = Run.objects.select_related("state", "owner").get(pk=run_id)
        outcome = Outcome(
            kind=str(status),
            run=run,
            args=run.args,
            state=run.state.data if run.state is not None else None,
            result=result,
            error_type=error_type,
            error_message=error_message,
        )
        job = registry.get(run.job) if run.job in registry else None
        if job is not None and job.finish_hook is not None:
            try:
                with transaction.atomic():
                    job.finish_hook(outcome, FinishContext(run=run, now=now))
            except Exception as error:
                logger.exception("finish hook of %s run %s failed", run.job, run.pk)
                failure = f"finish hook failed: {type(error).__name__}: {error}"
                if status == RunStatus.DONE:
                    status, error_type, error_message = (
                        RunStatus.FAILED,
                        type(error).__name__,
                        failure,
                    )
                else:
                    error_message = f"{error_message}; {failure}" if error_message else failure
                run.status, run.error_type, run.error_message = status, error_type, error_message
                run.save(update_fields=["status", "error_type", "error_message"])
        if run.schedule_id is not None:
            _record_on_schedule(run, now)
        live.run_changed(run.pk)
        transaction.on_commit(lambda: _announce(run))
    logger.info("finished %s run %s: %s", run.job, run.pk, run.status)
    return run


def _record_on_schedule(run: Run, now: datetime) -> None:
    """Carry the outcome to the schedule's last-run record, and start a buffered fire."""
    ok = run.status == RunStatus.DONE
    schedule_id = run.schedule_id
    assert schedule_id is not None
    Schedule.objects.filter(pk=schedule_id, last_run=run).update(
        last_ended=now,
        last_status=LastStatus.OK if ok else LastStatus.FAILED,
        last_error_type="" if ok else run.error_type or str(run.status),
        last_error_message="" if ok else run.error_message or f"the run was {run.status}",
    )
    schedule = (
        Schedule.objects.select_for_update()
        .filter(pk=schedule_id, buffered_due__isnull=False)
        .first()
    )
    if schedule is None:
        return
    due = schedule.buffered_due
    assert due is not None
    Schedule.objects.filter(pk=schedule.pk).update(buffered_due=None)
    try:
        if not schedule.enabled:
            raise StartRefused("the schedule was disabled while the fire waited")
        job = registry.get(schedule.job)
        start_for_schedule(schedule, job, job.validate_args(schedule.args), due=due, now=now)
    except (UnknownJob, InvalidArgs, StartRefused, IntegrityError) as error:
        # The buffered slot is lost, not the outcome being recorded with it.
        logger.error("buffered fire of %s due %s dropped: %s", schedule, due, error)
        Schedule.objects.filter(pk=schedule.pk).update(missed=F("missed") + 1)


def start_for_schedule(
    schedule: Schedule, job: Job, args: dict[str, Any], *, due: datetime, now: datetime
) -> Run:
    """Start the run of one slot of ``schedule`` and make it the row's last run.

    Inside the caller's transaction; the (schedule, due) unique constraint refuses a
    slot that already fired with an ``IntegrityError``.
    """
    with transaction.atomic():
        run = start_in_transaction(
            job, args, schedule=schedule, due=due, owner=schedule.owner, now=now, validated=True
        )
    Schedule.objects.filter(pk=schedule.pk).update(
        last_due=due,
        last_started=now,
        last_ended=None,
        last_status=LastStatus.RUNNING,
        last_error_type="",
        last_error_message="",
        last_run=run,
    )
    return run


def run_now(schedule: Schedule, *, now: datetime | None = None) -> Run:
    """Start a run of ``schedule``'s job now, outside its plan (the admin's *run now*).

    The args are validated again; the run's due is now. The plan is untouched.
    """
    moment = now or timezone.now()
    job = registry.get(schedule.job)
    with transaction.atomic():
        return start_for_schedule(
            schedule, job, job.validate_args(schedule.args), due=moment, now=moment
        )


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


def abort(run: Run, *, now: datetime | None = None) -> bool:
    """Request an abort. A run no worker has claimed (queued or blocked) ends at once.

    Returns False when the run had already finished.
    """
    moment = now or timezone.now()
    if not run.record_abort_request(moment):
        return False
    finish(run.pk, RunStatus.ABORTED, now=moment, expected=[RunStatus.QUEUED])
    return True


aabort = sync_to_async(abort)


def finish_lost(*, now: datetime, silent_since: datetime) -> int:
    """Finish as lost every running run that no live worker holds.

    That is a run whose worker stopped beating before ``silent_since``, whose worker
    row says it stopped, or whose worker row is gone.
    """
    silent = list(WorkerProcess.objects.silent_since(silent_since).values_list("pk", flat=True))
    lost = list(
        Run.objects.filter(status=RunStatus.RUNNING)
        .filter(Q(worker__in=silent) | Q(worker__isnull=True) | Q(worker__stopped_at__isnull=False))
        .values_list("pk", flat=True)
    )
    finished = 0
    for run_id in lost:
        if finish(
            run_id,
            RunStatus.LOST,
            now=now,
            error_type="WorkerLost",
            error_message="the worker running it stopped beating",
            expected=[RunStatus.RUNNING],
        ):
            finished += 1
    WorkerProcess.objects.filter(pk__in=silent, stopped_at__isnull=True).update(stopped_at=now)
    return finished

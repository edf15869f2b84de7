"""The start step: a run's intent, written in one transaction.

Everything that starts a run comes through here: a call, the API, a socket, the admin, a
schedule's fire, a finish hook's chained start. Each hands over a :class:`StartRequest`
(what to start, as whom) and the moment it starts; a schedule's fire adds the
:class:`Slot` it fills. :func:`start_or_get` opens its own transaction;
:func:`insert_run` writes into the caller's (a fire, a finish), so that the run exists
only if the caller's work commits. Nothing here publishes: the caller does, after the
commit (see :mod:`django_weft.live.changes`).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction

from django_weft import tracing
from django_weft.engine.database import sql
from django_weft.engine.limits import fairness
from django_weft.engine.runs.pacing import check_throttle, debounced, paced
from django_weft.exceptions import (
    ConcurrencyLimitReached,
    IdempotencyKeyReused,
    InvalidIdempotencyKey,
)
from django_weft.jobs.registry import Job, check_priority
from django_weft.jobs.revisions import storable
from django_weft.jobs.storable import find_unstorable
from django_weft.models import Document, Group, Run, RunStatus, Schedule, Workflow
from django_weft.signals import run_started

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger("django_weft.runs")

#: The stored key's length limit, its owner's scope included.
IDEMPOTENCY_KEY_LENGTH = cast(int, Run._meta.get_field("idempotency_key").max_length)

#: Rows per INSERT of :func:`write_runs` and :func:`insert_runs_in_bulk`: one statement
#: for a fan-out of this many, fewer where the database takes fewer parameters a
#: statement (Django asks it: ``bulk_batch_size``).
BULK_INSERT_ROWS = 500

#: The run table's columns in the order every INSERT here writes them.
_FIELDS = Run._meta.concrete_fields
#: The run's primary key field, which turns a returned id into a ``UUID``.
_PK = Run._meta.get_field("id")


@dataclass(frozen=True, slots=True)
class StartRequest:
    """What a start asks for: a run of ``job`` with ``args``, as ``owner``.

    ``key`` is an idempotency key (the owner's own: see :func:`scoped_key`); a resent
    start with it gets the run the first one made. ``priority`` and ``queue`` default to
    the job's; ``not_before`` keeps any worker from claiming the run before that moment
    (a task's ``run_after``). ``retry_of`` is the finished run this one retries: the new
    run links to it and keeps its schedule (not its due, which that run holds). ``group``
    makes the run a member of that group (see :mod:`django_weft.engine.flows.groups`);
    ``workflow`` a step of that workflow, ``waiting`` (for the steps it depends on) until
    their ends queue it (see :mod:`django_weft.engine.flows.workflows`).
    The args are checked when the run is written, against the job's serializer; a
    priority outside -100..100 is refused here, with a ``ValueError`` naming it.
    """

    job: Job
    args: Mapping[str, Any] | None = None
    key: str | None = None
    owner: AbstractBaseUser | None = None
    priority: int | None = None
    queue: str | None = None
    not_before: datetime | None = None
    retry_of: Run | None = None
    group: Group | None = None
    workflow: Workflow | None = None
    waiting: bool = False

    def __post_init__(self) -> None:
        if self.priority is not None:
            check_priority(self.priority)


@dataclass(frozen=True, slots=True)
class Slot:
    """The slot of ``schedule`` a fire fills: the run's ``due``, unique per schedule.

    A fire's args are the schedule's, already validated against the job when the fire
    was decided, so a start with a slot stores them as they are.
    """

    schedule: Schedule
    due: datetime


def start_or_get(request: StartRequest, *, now: datetime) -> tuple[Run, bool]:
    """Start the run ``request`` asks for in its own transaction; also say whether this
    call made it.

    Raises :class:`~django_weft.exceptions.InvalidArgs` for args that fail the job's
    serializer and :class:`~django_weft.exceptions.StartRefused` (concurrency limit,
    reused key); in both cases nothing is written. With a key a resent start returns
    the run the first one made, and False (an HTTP API answers 200 instead of 201 then).
    The priority (default: the job's) orders the claim: higher first, then older first.

    A start that writes one row and reads nothing (no key, no limit, no state: see
    :func:`starts_in_bulk`) is one INSERT, atomic by itself: it opens no transaction (a
    ``BEGIN`` and a ``COMMIT``, two round trips of three) nor, inside the caller's, a
    savepoint.
    """
    one_statement = request.key is None and starts_in_bulk(request.job)
    atomic = contextlib.nullcontext() if one_statement else transaction.atomic()
    with _start_span(request) as span, atomic:
        run, made = _insert(request, now, None)
        span.set_attribute("weft.run_id", str(run.pk))
        return run, made


def insert_run(request: StartRequest, *, now: datetime, slot: Slot | None = None) -> Run:
    """Write the start of a run into the caller's transaction (a schedule's fire, a finish).

    Opens none of its own: the run exists only if the caller commits.
    """
    with _start_span(request) as span:
        run = _insert(request, now, slot)[0]
        span.set_attribute("weft.run_id", str(run.pk))
        return run


def _start_span(request: StartRequest) -> AbstractContextManager[tracing.Span]:
    """The ``weft.start`` span of one start (see :mod:`django_weft.tracing`)."""
    return tracing.span("weft.start", {"weft.job": request.job.name})


def announce_started(runs: Sequence[Run]) -> None:
    """Send ``run_started`` for ``runs`` once the caller's transaction commits."""
    transaction.on_commit(lambda: _send_started(runs))


def _send_started(runs: Sequence[Run]) -> None:
    for run in runs:
        run_started.send_robust(sender=Run, run=run)


def _insert(request: StartRequest, now: datetime, slot: Slot | None) -> tuple[Run, bool]:
    job, owner, given = request.job, request.owner, request.key
    priority = job.priority if request.priority is None else request.priority
    stored = (
        dict(request.args or {})
        if slot is not None
        else job.validate_args(request.args, owner=owner)
    )
    key = None if given is None else scoped_key(given, owner)
    # The run's key, for its job's concurrency limit at start and for flow limits per
    # key at the claim.
    concurrency_key = ""
    if job.concurrency_key is not None:
        concurrency_key = job.concurrency_key(stored, owner) or ""
    if job.concurrency is not None or paced(job):
        serialize_starts(job.name, concurrency_key)
    if key is not None and (existing := _run_for_key(job, key, stored, given)) is not None:
        return existing, False
    not_before = request.not_before
    if slot is None and request.retry_of is None and paced(job):
        check_throttle(job, concurrency_key, now)
        joined = debounced(job, concurrency_key, stored, owner, now) if key is None else None
        if joined is not None:
            return joined, False
        if job.debounce is not None:
            not_before = max(filter(None, (not_before, now + job.debounce)))
    if job.concurrency is not None:
        unfinished = Run.objects.unfinished().filter(job=job.name, concurrency_key=concurrency_key)
        if unfinished.count() >= job.concurrency:
            raise ConcurrencyLimitReached(job.name, job.concurrency, concurrency_key or None)
    run = new_run(
        job,
        stored,
        owner=owner,
        slot=slot,
        now=now,
        priority=priority,
        key=key,
        concurrency_key=concurrency_key,
        queue=request.queue,
        not_before=not_before,
        retry_of=request.retry_of,
        group=request.group,
        workflow=request.workflow,
        waiting=request.waiting,
    )
    # Only a keyed start can lose an insert race it must survive (by returning the
    # winner), so only it pays for a savepoint; a schedule's fire has its own.
    try:
        with transaction.atomic() if key is not None else contextlib.nullcontext():
            if job.state is not None:
                state_key = f"run:{run.id}"
                run.state = Document.objects.create(
                    key=state_key,
                    schema=job.state.name,
                    version=job.state.version,
                    data=storable(state_key, job.state.initial()),
                )
            write_runs([run])
    except IntegrityError:
        # Two starts with one key raced; the other insert won and is returned.
        if key is None or (existing := _run_for_key(job, key, stored, given)) is None:
            raise
        return existing, False
    logger.debug("started %s run %s", job.name, run.pk)
    announce_started([run])
    return run, True


def scoped_key(key: str, owner: AbstractBaseUser | None) -> str:
    """An idempotency key as stored: ``"<owner id>:<key>"`` (``":<key>"`` without one).

    Keys are chosen by clients, so two owners who happen to pick the same key get two
    runs, and neither may receive the other's run by guessing it. A blank key, one too
    long to store, or one holding a NUL character is refused.
    """
    prefix = f"{owner.pk}:" if owner is not None else ":"
    room = IDEMPOTENCY_KEY_LENGTH - len(prefix)
    if not key.strip() or len(key) > room:
        raise InvalidIdempotencyKey(key, room)
    found = find_unstorable(key)
    if found is not None:
        raise InvalidIdempotencyKey(key, room, found.problem)
    return prefix + key


def new_run(
    job: Job,
    stored: dict[str, Any],
    *,
    owner: AbstractBaseUser | None,
    slot: Slot | None,
    now: datetime,
    priority: int,
    key: str | None = None,
    concurrency_key: str = "",
    queue: str | None = None,
    not_before: datetime | None = None,
    retry_of: Run | None = None,
    group: Group | None = None,
    workflow: Workflow | None = None,
    waiting: bool = False,
) -> Run:
    """The unsaved row of a new run of ``job`` with already validated ``stored`` args.

    ``not_before`` is kept as the run's ``run_after`` and gates its first claim as a
    retry's ``retry_at`` does, so the worker's wake-up includes it. A retry (``retry_of``)
    links to the run it retries and keeps its schedule.
    """
    if slot is not None:
        schedule: Schedule | None = slot.schedule
    else:
        schedule = retry_of.schedule if retry_of is not None else None
    return Run(
        id=uuid.uuid4(),
        job=job.name,
        job_version=job.version,
        args=stored,
        owner=cast(Any, owner),  # AUTH_USER_MODEL, whatever class the project swapped in
        schedule=schedule,
        retry_of=retry_of,
        due=slot.due if slot is not None else None,
        idempotency_key=key,
        concurrency_key=concurrency_key,
        queue=job.queue if queue is None else queue,
        priority=priority,
        created_at=now,
        task_backend=job.task_backend,
        run_after=not_before,
        retry_at=not_before,
        group=group,
        workflow=workflow,
        status=RunStatus.WAITING if waiting else RunStatus.QUEUED,
    )


def starts_in_bulk(job: Job) -> bool:
    """Whether a run of ``job`` is one row and nothing else: no limit to count, no key
    to compute, no state.

    Such runs, fired by schedules, are inserted many at once (see
    :func:`insert_runs_in_bulk`).
    """
    return (
        job.concurrency is None
        and job.concurrency_key is None
        and job.state is None
        and not paced(job)
    )


def write_runs(runs: Sequence[Run]) -> None:
    """Insert the new ``runs`` into the caller's transaction, :data:`BULK_INSERT_ROWS` a
    statement: a key or slot another run holds raises ``IntegrityError``.

    Written by hand, as ``save(force_insert=True)`` and ``bulk_create`` write them, since
    the ORM's compiling of a 29-column INSERT cost a start a fifth of its time (0.15 of
    0.79 ms on PostgreSQL) and a bulk start half of its; no ``pre_save``/``post_save`` is
    sent for runs, as for those ``bulk_create`` writes.
    """
    _insert_rows(runs, skip_conflicts=False)


def _insert_rows(runs: Sequence[Run], *, skip_conflicts: bool) -> set[uuid.UUID]:
    """Insert ``runs``, leaving out (with ``skip_conflicts``) a run whose unique slot or
    key another run holds; returns the ids of the runs that were inserted."""
    if not runs:
        return set()
    # Every new run is written here, so every one in a fair queue gets its turn here.
    fairness.place(runs)
    per_insert = min(BULK_INSERT_ROWS, connection.ops.bulk_batch_size(_FIELDS, runs))
    suffix = f" ON CONFLICT DO NOTHING RETURNING {sql.column(Run, 'id')}" if skip_conflicts else ""
    inserted: set[uuid.UUID] = set()
    with connection.cursor() as cursor:
        for start in range(0, len(runs), per_insert):
            chunk = runs[start : start + per_insert]
            rows = _values(chunk)
            if connection.vendor == "postgresql" and len(chunk) > 1:
                source, params = (
                    _column_arrays(),
                    [list(column) for column in zip(*rows, strict=True)],
                )
            else:
                source = "VALUES " + ", ".join([f"({_row()})"] * len(chunk))
                params = [value for row in rows for value in row]
            cursor.execute(f"INSERT INTO {sql.table(Run)} ({_columns()}) {source}{suffix}", params)
            if skip_conflicts:
                returned = {_PK.to_python(value) for (value,) in cursor.fetchall()}
                chunk = [run for run in chunk if run.pk in returned]
            for run in chunk:
                run._state.adding = False
                run._state.db = connection.alias
                inserted.add(run.pk)
    return inserted


def _columns() -> str:
    """The run table's columns, quoted, in the order :func:`_values` gives."""
    return _quoted_columns(connection.vendor)


@cache
def _quoted_columns(vendor: str) -> str:
    """:func:`_columns` for one database vendor, built once: every start sends it."""
    return ", ".join(sql.column(Run, field.name) for field in _FIELDS)


@cache
def _column_arrays() -> str:
    """The rows of a PostgreSQL INSERT of many runs (see :func:`sql.column_arrays`)."""
    return sql.column_arrays(_FIELDS)


def _row() -> str:
    return ", ".join(["%s"] * len(_FIELDS))


def _values(runs: Sequence[Run]) -> list[list[Any]]:
    """Each run's values as the database takes them, as ``save()`` would prepare them.

    With the connection itself rather than Django's proxy for it, which each of the 29
    fields of every run would otherwise look up again (a tenth of a bulk start's time).
    """
    database = connections[DEFAULT_DB_ALIAS]
    return [
        [field.get_db_prep_save(field.pre_save(run, add=True), database) for field in _FIELDS]
        for run in runs
    ]


def insert_runs_in_bulk(runs: Sequence[Run]) -> set[uuid.UUID]:
    """Insert ``runs`` (of jobs that :func:`starts_in_bulk`) in a few statements.

    A run whose (schedule, due) slot already fired is left out, as the unique constraint
    says; returns the ids of the runs that were inserted.
    """
    with tracing.span("weft.start", {"weft.runs": len(runs)}):
        inserted = _insert_rows(runs, skip_conflicts=True)
    started = [run for run in runs if run.pk in inserted]
    for run in started:
        logger.debug("started %s run %s", run.job, run.pk)
    announce_started(started)
    return inserted


def _run_for_key(job: Job, key: str, stored: dict[str, Any], given: str | None) -> Run | None:
    existing = Run.objects.filter(job=job.name, idempotency_key=key).first()
    if existing is not None and existing.args != stored:
        raise IdempotencyKeyReused(job.name, given or key)
    return existing


def serialize_starts(job: str, key: str) -> None:
    """Make concurrent starts of one job and key take turns until their commit.

    PostgreSQL gets a transaction-level advisory lock; SQLite serializes writing
    transactions itself (use ``"transaction_mode": "IMMEDIATE"``, check W001).
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"weft:{job}:{key}"])

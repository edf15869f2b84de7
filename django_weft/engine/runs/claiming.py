"""The claim: a worker takes queued runs it can execute, each once, in one statement.

``WITH picked AS (SELECT ... ORDER BY priority DESC, COALESCE(turn_at, run_after,
created_at), created_at LIMIT n FOR UPDATE SKIP LOCKED) UPDATE ... FROM picked RETURNING ...`` on
PostgreSQL, ``UPDATE ... WHERE id IN
(SELECT ... LIMIT n) RETURNING ...`` on SQLite (whose single writer needs no lock): the
pick walks the partial index over queued runs in claim order and stops after a batch, so
its cost does not grow with the backlog, and the rows come back from the update itself,
with no second read. The order is priority (high first), then the moment a run became
claimable (its turn in a fair queue, see :mod:`django_weft.engine.limits.fairness`; else
a task's ``run_after``, else when it was started), then when it was started:
of runs of equal priority, a task enqueued at 8:00 to run after 9:00 goes after a run
started at 8:30 and before one started at 9:05. A claimed run is ``running`` on that
worker with its attempt number raised by one (kept, for a run that waited and goes on:
``resuming``); only that worker (and attempt) may finish it (see
:mod:`django_weft.engine.outcomes.finishing`).

The pick also names the claiming worker's registration: its row, not stopped, read
``FOR SHARE`` on PostgreSQL. A worker that others declared dead claims nothing, and a
reaper marking it stopped waits for a claim in progress, so the runs of that claim are
among those it then finishes as lost (see :mod:`django_weft.engine.worker.reaping`).

The statement is built once per set of deployed jobs and queues, not per claim.

While any flow limit with a concurrency or a rate exists, the plain statement takes
nothing (it says so in its ``WHERE``), and a claim that took nothing goes on through
:func:`_claim_limited`: the
limits that may concern the claim are locked and counted, the pick leaves out what they
hold back, and what they admit is taken (see :mod:`django_weft.engine.limits.budget`).
A project with no limit pays for none of it but one ``EXISTS`` when its queue is empty;
a process that found limits at its last claim goes the limited way at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import cache, partial
from typing import TYPE_CHECKING

from django.db import connection, transaction

from django_weft.engine.database import sql
from django_weft.engine.limits.budget import (
    LIMITING,
    Budget,
    Candidate,
    limiting_sql,
    lock_concerning,
)
from django_weft.models import FlowBegin, FlowLimit, PausedQueue, Run, RunStatus, WorkerProcess

if TYPE_CHECKING:
    from django_weft.jobs.registry import Job


def deployed_pairs(jobs: Iterable[Job]) -> tuple[tuple[str, int], ...]:
    """The (name, version) pairs a worker running ``jobs`` can execute, in a stable order."""
    return tuple(sorted((job.name, job.version) for job in jobs))


def claim(
    deployed: Sequence[tuple[str, int]],
    *,
    limit: int,
    worker: WorkerProcess,
    now: datetime,
    queues: Iterable[str] | None,
    held: Callable[[datetime], None] | None = None,
) -> list[Run]:
    """Mark up to ``limit`` queued runs as running on ``worker`` and return them.

    Only runs whose (job, version) is in ``deployed`` (see :func:`deployed_pairs`) are
    taken, the others being blocked here; a run waiting for a retry is not taken before
    its ``retry_at``, nor a run of a paused queue, nor a run its flow limits hold back.
    ``held`` is told when a rate now full next lets a run begin, for the worker to look
    again then.
    """
    if not deployed or limit < 1:
        return []
    chosen = None if queues is None else tuple(sorted(set(queues)))
    if not _limits_seen.flag:
        claimed = _claim_plain(deployed, chosen, limit=limit, worker=worker, now=now)
        if claimed or not FlowLimit.objects.filter(LIMITING).exists():
            return claimed
    return _claim_limited(deployed, chosen, limit=limit, worker=worker, now=now, held=held)


class _Seen:
    """Whether this process's last claim found flow limits (``flag``): its next claim
    then goes the limited way at once, rather than through a plain claim that takes
    nothing while any limit exists. A limited claim that finds none clears it and claims
    plainly. ``concerned``: whether any of them concerned that claim."""

    flag = False
    concerned = False


_limits_seen = _Seen()


def under_limits() -> bool:
    """Whether this process's last claim was made under flow limits that concern it:
    each such claim takes a turn on the limits' locks, so a worker under them claims in
    batches (see :mod:`django_weft.engine.worker.intake`)."""
    return _limits_seen.flag and _limits_seen.concerned


def _claim_plain(
    deployed: Sequence[tuple[str, int]],
    chosen: tuple[str, ...] | None,
    *,
    limit: int,
    worker: WorkerProcess,
    now: datetime,
) -> list[Run]:
    """The claim in one statement, taking nothing while any flow limit exists."""
    statement = _claim_sql(connection.vendor, len(deployed), 0 if chosen is None else len(chosen))
    picking = [*_pick_params(deployed, chosen, worker, now), limit]
    setting = _setting(worker, now)
    # The pick comes first in PostgreSQL's statement (a CTE), last in SQLite's.
    params = [*picking, *setting] if connection.vendor == "postgresql" else [*setting, *picking]
    return _in_claim_order(Run.objects.raw(statement, params))


def _claim_limited(
    deployed: Sequence[tuple[str, int]],
    chosen: tuple[str, ...] | None,
    *,
    limit: int,
    worker: WorkerProcess,
    now: datetime,
    held: Callable[[datetime], None] | None,
) -> list[Run]:
    """The claim under the flow limits that may concern it (see
    :mod:`django_weft.engine.limits.budget`): lock, count, pick, admit, take, in one
    transaction."""
    with transaction.atomic():
        limits = lock_concerning((name for name, _ in deployed), chosen)
        if not limits and not FlowLimit.objects.filter(LIMITING).exists():
            _limits_seen.flag = _limits_seen.concerned = False
            return _claim_plain(deployed, chosen, limit=limit, worker=worker, now=now)
        _limits_seen.flag, _limits_seen.concerned = True, bool(limits)
        budget = Budget.counted(limits, now, binding=limit)
        exclusions, excluded = budget.exclusions()
        statement = _limited_pick_sql(
            connection.vendor, len(deployed), 0 if chosen is None else len(chosen), exclusions
        )
        params = [*_pick_params(deployed, chosen, worker, now), *excluded, limit * OVERFETCH]
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            candidates = [Candidate(uuid.UUID(str(row[0])), *row[1:]) for row in cursor.fetchall()]
        admitted = budget.admit(candidates, limit)
        slot = budget.next_slot()
        if held is not None and slot is not None:
            held(slot)
        if not admitted:
            return []
        taken = _take(admitted, budget.begins(admitted, now), worker, now)
        budget.prune(now)
    return taken


def _take(
    admitted: Sequence[Candidate], begins: Sequence[FlowBegin], worker: WorkerProcess, now: datetime
) -> list[Run]:
    """Claim the ``admitted`` runs (locked by the pick) and write their ``begins``: in
    one statement on PostgreSQL (the INSERT a CTE of the UPDATE), two on SQLite."""
    ids = [sql.prep(Run, "id", each.id) for each in admitted]
    together = connection.vendor == "postgresql" and bool(begins)
    statement = _take_sql(connection.vendor, len(admitted), together)
    written = [
        [sql.prep(FlowBegin, name, getattr(begin, name)) for begin in begins]
        for name in ("limit_id", "key", "at")
    ]
    params = [*(written if together else ()), *_setting(worker, now), *ids]
    taken = _in_claim_order(Run.objects.raw(statement, params))
    if begins and not together:
        FlowBegin.objects.bulk_create(begins)
    return taken


#: How many candidates the limited claim reads for each run it may take: candidates of
#: keys with little room left are passed over, and the claim should still fill up.
OVERFETCH = 4


def _pick_params(
    deployed: Sequence[tuple[str, int]],
    chosen: tuple[str, ...] | None,
    worker: WorkerProcess,
    now: datetime,
) -> list[object]:
    return [
        *(value for pair in deployed for value in pair),
        *(chosen or ()),
        sql.prep(Run, "retry_at", now),
        sql.prep(WorkerProcess, "id", worker.pk),
    ]


def _setting(worker: WorkerProcess, now: datetime) -> list[object]:
    return [sql.prep(Run, "worker", worker.pk), sql.prep(Run, "started_at", now)]


def _in_claim_order(runs: Iterable[Run]) -> list[Run]:
    return sorted(
        runs,
        key=lambda run: (
            -run.priority,
            run.turn_at or run.run_after or run.created_at,
            run.created_at,
            run.due or run.created_at,
        ),
    )


@cache
def _pick_where(vendor: str, jobs: int, queues: int) -> str:
    """The pick's table and conditions, for ``jobs`` (name, version) pairs and ``queues``
    queue names: queued, deployed, due, not paused, by a registered worker."""
    table = sql.table(Run)
    column = partial(sql.column, Run)
    pairs = ", ".join(["(%s, %s)"] * jobs)
    worker = sql.table(WorkerProcess)
    registered = (
        f"SELECT 1 FROM {worker} WHERE {sql.column(WorkerProcess, 'id')} = %s "
        f"AND {sql.column(WorkerProcess, 'stopped_at')} IS NULL"
        # FOR SHARE: the row cannot be marked stopped until this claim commits, and a
        # claim that waited for a mark reads the row as marked.
        + (" FOR SHARE" if vendor == "postgresql" else "")
    )
    queue_filter = f" AND {column('queue')} IN ({', '.join(['%s'] * queues)})" if queues else ""
    # SQLite's planner, left to itself, reads the queued runs through the status index
    # and sorts them all; named, the claim's own index gives them in order.
    indexed = " INDEXED BY weft_run_claim" if vendor == "sqlite" else ""
    return (
        f"FROM {table}{indexed} "
        f"WHERE {column('status')} = '{RunStatus.QUEUED}' "
        f"AND ({column('job')}, {column('job_version')}) IN (VALUES {pairs}){queue_filter} "
        f"AND ({column('retry_at')} IS NULL OR {column('retry_at')} <= %s) "
        f"AND {column('queue')} NOT IN (SELECT {sql.column(PausedQueue, 'queue')} "
        f"FROM {sql.table(PausedQueue)}) "
        f"AND EXISTS ({registered})"
    )


@cache
def _claim_order() -> str:
    """The order of the partial index weft_run_claim, expression for expression."""
    column = partial(sql.column, Run)
    return (
        f"ORDER BY {column('priority')} DESC, "
        f"COALESCE({column('turn_at')}, {column('run_after')}, {column('created_at')}), "
        f"{column('created_at')}, {column('due')}"
    )


@cache
def _claim_sql(vendor: str, jobs: int, queues: int) -> str:
    """The plain claim statement for ``jobs`` (name, version) pairs and ``queues`` names."""
    table = sql.table(Run)
    column = partial(sql.column, Run)
    pick = (
        f"SELECT {column('id')} {_pick_where(vendor, jobs, queues)} "
        f"AND NOT EXISTS (SELECT 1 FROM {sql.table(FlowLimit)} WHERE {limiting_sql()}) "
        f"{_claim_order()} LIMIT %s"
    )
    if vendor == "postgresql":
        # A materialized CTE, not ``WHERE id IN (subquery)``: PostgreSQL may run a
        # subquery in a semi join once per outer row, and claim more than the limit.
        picked = f"WITH picked AS MATERIALIZED ({pick} FOR UPDATE SKIP LOCKED) "
        target = f"FROM picked WHERE {table}.{column('id')} = picked.{column('id')}"
    else:
        picked, target = "", f"WHERE {column('id')} IN ({pick})"
    return f"{picked}{_update(vendor, target)}"


@cache
def _limited_pick_sql(vendor: str, jobs: int, queues: int, exclusions: str) -> str:
    """The limited claim's pick: the candidates, with what the limits read of them."""
    column = partial(sql.column, Run)
    left_out = f" AND {exclusions}" if exclusions else ""
    return (
        f"SELECT {column('id')}, {column('job')}, {column('queue')}, "
        f"{column('concurrency_key')} {_pick_where(vendor, jobs, queues)}{left_out} "
        f"{_claim_order()} LIMIT %s" + (" FOR UPDATE SKIP LOCKED" if vendor == "postgresql" else "")
    )


@cache
def _take_sql(vendor: str, count: int, with_begins: bool) -> str:
    """The limited claim's update of the ``count`` runs it admitted (locked by its
    pick), on PostgreSQL ``with_begins`` written by the same statement."""
    ids = ", ".join(["%s"] * count)
    update = _update(vendor, f"WHERE {sql.column(Run, 'id')} IN ({ids})")
    if not with_begins:
        return update
    fields = [FlowBegin._meta.get_field(name) for name in ("limit", "key", "at")]
    columns = ", ".join(sql.column(FlowBegin, field.name) for field in fields)
    rows = sql.column_arrays(fields)  # type: ignore[arg-type]
    return f"WITH begun AS (INSERT INTO {sql.table(FlowBegin)} ({columns}) {rows}) {update}"


def _update(vendor: str, target: str) -> str:
    """The claim's UPDATE of the runs ``target`` names, returning their rows."""
    table = sql.table(Run)
    column = partial(sql.column, Run)
    returned = ", ".join(f"{table}.{column(field.name)}" for field in Run._meta.concrete_fields)
    return (
        f"UPDATE {table} SET {column('status')} = '{RunStatus.RUNNING}', "
        f"{column('worker')} = %s, {column('started_at')} = %s, "
        # A run that waited goes on with the attempt that waited; any other begins one.
        f"{column('attempt')} = {table}.{column('attempt')} + "
        f"CASE WHEN {table}.{column('resuming')} THEN 0 ELSE 1 END, "
        f"{column('resuming')} = FALSE, {column('retry_at')} = NULL, "
        f"{column('error_type')} = '', {column('error_class_path')} = '', "
        f"{column('error_message')} = '', "
        f"{column('error_traceback')} = '' {target} "
        # On SQLite a unary plus keeps its planner from reading every queued run through
        # the status index for this re-check, instead of the few named by their ids.
        f"AND {'+' if vendor == 'sqlite' else ''}{table}.{column('status')} "
        f"= '{RunStatus.QUEUED}' RETURNING {returned}"
    )

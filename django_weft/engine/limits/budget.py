"""What the flow limits leave for one claim, counted under their row locks.

A claim that any limit may concern runs in a transaction that first reads and locks
the rows of those limits in one statement (``FOR UPDATE`` on PostgreSQL; on SQLite a
write to them takes the database's one write lock), then counts, for each limit and
key, the runs running and the begins of the last period. Two workers' claims under the
same limit therefore take their turns: the second counts what the first claimed, since
the first committed before it let go of the lock. Claims that no limit concerns never wait for one.

The claim then picks candidates in its usual order, leaving out the limits and keys
already full (in the statement, so that a full key's backlog costs nothing), and
:meth:`Budget.admit` keeps each candidate whose every limit has room, taking that room,
until the claim has enough. The begins it admits under a rate are written as
:class:`~django_weft.models.FlowBegin` rows in the same transaction (on PostgreSQL in
the statement that takes the runs).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache, partial
from typing import Any

from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.db.models.expressions import RawSQL

from django_weft.engine.database import sql
from django_weft.models import FlowBegin, FlowLimit, Run, RunStatus

#: How long past its window a begin is kept. A claim's ``now`` is read before it waits
#: for the limits' locks, so a claim may count from a moment earlier than the claim
#: before it; the begins that claim still counts must not be gone.
KEPT = timedelta(minutes=1)

#: The limits a claim counts: those with a concurrency or a rate. A fair share alone is
#: kept by the runs' turns (see :mod:`django_weft.engine.limits.fairness`), not here.
LIMITING = Q(concurrency__isnull=False) | Q(rate__isnull=False)


def limiting_sql() -> str:
    """:data:`LIMITING` in SQL, for the statements written by hand."""
    column = partial(sql.column, FlowLimit)
    return f"({column('concurrency')} IS NOT NULL OR {column('rate')} IS NOT NULL)"


def left_in(condition: str, params: Sequence[Any]) -> ExpressionWrapper[Any]:
    """A condition of :meth:`Budget.exclusion` or :meth:`Budget.exclusions` as an
    expression: true for the runs no limit holds back, for an ORM filter or count."""
    return ExpressionWrapper(RawSQL(condition, params), output_field=BooleanField())


#: (limit id, key): a limit's bucket; the key is "" for a limit not per key.
Bucket = tuple[int, str]


@dataclass(frozen=True)
class Candidate:
    """A queued run the claim's pick found, with what the limits read of it."""

    id: uuid.UUID
    job: str
    queue: str
    key: str


def covers(limit: FlowLimit, job: str, queue: str) -> bool:
    """Whether ``limit`` concerns runs of ``job`` in ``queue``."""
    return limit.job in ("", job) and limit.queue in ("", queue)


def bucket(limit: FlowLimit, key: str) -> Bucket:
    return (limit.pk, key if limit.per_key else "")


def lock_concerning(jobs: Iterable[str], queues: Iterable[str] | None) -> list[FlowLimit]:
    """The limits with a concurrency or a rate that may concern a claim of ``jobs`` from
    ``queues`` (None: any), locked until the caller's transaction ends, in one statement
    (``FOR UPDATE`` on PostgreSQL; on SQLite an update of them takes the one write lock).
    Written by hand, as every statement of a claim: it runs at every claim under limits,
    where building it with the ORM cost more than running it."""
    names = sorted(set(jobs))
    chosen = None if queues is None else sorted(set(queues))
    where = _concerning_sql(len(names), None if chosen is None else len(chosen))
    params = [*names, *(chosen or ())]
    table = sql.table(FlowLimit)
    if connection.vendor == "postgresql":
        locking = " FOR UPDATE"
    else:
        locking = ""
        name = sql.column(FlowLimit, "name")
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET {name} = {name} WHERE {where}", params)
    found = f"SELECT * FROM {table} WHERE {where} ORDER BY {sql.column(FlowLimit, 'id')}"
    return list(FlowLimit.objects.raw(found + locking, params))


@cache
def _concerning_sql(jobs: int, queues: int | None) -> str:
    column = partial(sql.column, FlowLimit)
    named = ", ".join(["%s"] * jobs) or "NULL"
    where = f"{limiting_sql()} AND ({column('job')} = '' OR {column('job')} IN ({named}))"
    if queues is not None:
        chosen = ", ".join(["%s"] * queues) or "NULL"
        where += f" AND ({column('queue')} = '' OR {column('queue')} IN ({chosen}))"
    return where


class Budget:
    """The room each limit's buckets have left, for one claim."""

    def __init__(
        self,
        limits: Sequence[FlowLimit],
        now: datetime,
        running: Counter[Bucket],
        begun: Counter[Bucket],
        oldest: dict[Bucket, datetime],
    ):
        self.limits = limits
        self._now = now
        self._running = running
        self._begun = begun
        #: Each rate's bucket's oldest begin in its window: its next slot is a period on.
        self._oldest = oldest

    @classmethod
    def counted(
        cls, limits: Sequence[FlowLimit], now: datetime, binding: int | None = None
    ) -> Budget:
        """Count the use of ``limits`` now (under their locks for a claim; without, for
        a page), every limit's counts in one statement. With ``binding`` (a claim's
        size), only the buckets such a claim could fill are read: a claim's cost then
        does not grow with the keys that have room (one with none read has room for it
        all)."""
        running: Counter[Bucket] = Counter()
        begun: Counter[Bucket] = Counter()
        oldest: dict[Bucket, datetime] = {}
        by_id = {limit.pk: limit for limit in limits}
        for limit_id, rated, key, count, first in _counts(limits, now, binding):
            if rated:
                begun[(limit_id, key)] += count
                oldest[(limit_id, key)] = sql.from_db(FlowBegin, "at", first)
            else:
                running[bucket(by_id[limit_id], key)] += count
        return cls(limits, now, running, begun, oldest)

    def room(self, limit: FlowLimit, key: str) -> int:
        """How many more runs of ``key`` ``limit`` lets this claim begin."""
        found = bucket(limit, key)
        left = []
        if limit.concurrency is not None:
            left.append(limit.concurrency - self._running[found])
        if limit.rate is not None:
            left.append(limit.rate - self._begun[found])
        return min(left)

    def exclusions(self) -> tuple[str, list[Any]]:
        """A condition (and its parameters) leaving out the runs of every full limit and
        key, for the claim's pick: ``NOT (...) AND NOT (...)``, or ``""``."""
        parts: list[str] = []
        params: list[Any] = []
        for limit in self.limits:
            part, part_params = self.exclusion(limit)
            if part:
                parts.append(part)
                params += part_params
        return " AND ".join(parts), params

    def exclusion(self, limit: FlowLimit) -> tuple[str, list[Any]]:
        """A condition leaving out the runs ``limit`` holds back now (``""``: none)."""
        scope, scope_params = _scope_sql(limit)
        if not limit.per_key:
            return (f"NOT ({scope})", scope_params) if self.room(limit, "") <= 0 else ("", [])
        full = sorted(
            key
            for (limit_id, key) in {*self._running, *self._begun}
            if limit_id == limit.pk and self.room(limit, key) <= 0
        )
        if not full:
            return "", []
        keys = ", ".join(["%s"] * len(full))
        return (
            f"NOT ({scope} AND {sql.column(Run, 'concurrency_key')} IN ({keys}))",
            [*scope_params, *full],
        )

    def admit(self, candidates: Iterable[Candidate], wanted: int) -> list[Candidate]:
        """The candidates, in order, whose every limit has room, taking it, up to ``wanted``."""
        admitted: list[Candidate] = []
        for candidate in candidates:
            if len(admitted) == wanted:
                break
            concerned = [
                limit for limit in self.limits if covers(limit, candidate.job, candidate.queue)
            ]
            if all(self.room(limit, candidate.key) > 0 for limit in concerned):
                for limit in concerned:
                    taken = bucket(limit, candidate.key)
                    self._running[taken] += 1
                    self._begun[taken] += 1
                    self._oldest.setdefault(taken, self._now)
                admitted.append(candidate)
        return admitted

    def slot_of(self, limit: FlowLimit, key: str) -> datetime | None:
        """When ``limit``'s rate lets a run of ``key`` begin again (None: it has room)."""
        found = bucket(limit, key)
        if limit.period is None or found not in self._oldest:
            return None
        return self._oldest[found] + limit.period

    def running(self, limit: FlowLimit, key: str) -> int:
        return self._running[bucket(limit, key)]

    def begun(self, limit: FlowLimit, key: str) -> int:
        return self._begun[bucket(limit, key)]

    def busiest(self, limit: FlowLimit, kind: str) -> int:
        """The most any bucket of ``limit`` has ``running`` or ``begun`` now."""
        counted = self._running if kind == "running" else self._begun
        return max((n for (limit_id, _), n in counted.items() if limit_id == limit.pk), default=0)

    def next_slot(self) -> datetime | None:
        """When the first rate now full lets a run begin again: its bucket's oldest
        begin in the window, a period on (None: no rate is full)."""
        moments = [
            self._oldest[(limit.pk, key)] + limit.period
            for limit in self.limits
            if limit.rate is not None and limit.period is not None
            for (limit_id, key) in self._begun
            if limit_id == limit.pk and self.room(limit, key) <= 0
        ]
        return min(moments, default=None)

    def begins(self, admitted: Iterable[Candidate], now: datetime) -> list[FlowBegin]:
        """The begins of ``admitted`` under each rate that concerns them, to be written
        in the claim's transaction."""
        rated = self._rated()
        return [
            FlowBegin(limit=limit, key=bucket(limit, candidate.key)[1], at=now)
            for candidate in admitted
            for limit in rated
            if covers(limit, candidate.job, candidate.queue)
        ]

    def prune(self, now: datetime) -> None:
        """Drop the begins no claim will count again (see :data:`KEPT`), once in a while."""
        for limit in self._rated():
            assert limit.period is not None
            if _pruned.due(limit, now):
                FlowBegin.objects.filter(limit=limit, at__lte=now - limit.period - KEPT).delete()

    def _rated(self) -> list[FlowLimit]:
        return [
            limit for limit in self.limits if limit.rate is not None and limit.period is not None
        ]


class _Pruned:
    """When this process last dropped each rate's old begins: once a period (ten
    seconds at least) is enough, since :data:`KEPT` keeps a minute's more anyway, and a
    claim need not pay a ``DELETE`` each time. Forgetting it (a new process) only
    prunes once more."""

    def __init__(self) -> None:
        self._at: dict[int, datetime] = {}

    def due(self, limit: FlowLimit, now: datetime) -> bool:
        assert limit.period is not None
        last = self._at.get(limit.pk)
        if last is not None and last <= now < last + max(limit.period, PRUNE_EVERY):
            return False
        self._at[limit.pk] = now
        return True


PRUNE_EVERY = timedelta(seconds=10)
_pruned = _Pruned()


def running_sql(limit: FlowLimit, binding: int | None = None) -> tuple[str, list[Any]]:
    """(limit id, 0, key, running runs, NULL) of what ``limit`` concerns, by key, read
    through the index over running runs. With ``binding``, for a limit per key, only the
    keys a claim of that many runs could fill: the others have room for all of it,
    whatever they hold."""
    column = partial(sql.column, Run)
    scope, params = _scope_sql(limit)
    having = ""
    if binding is not None and limit.per_key and limit.concurrency is not None:
        having = " HAVING COUNT(*) > %s"
        params.append(limit.concurrency - binding)
    statement = (
        f"SELECT {int(limit.pk)}, 0, {column('concurrency_key')}, COUNT(*), NULL "
        f"FROM {sql.table(Run)} WHERE {column('status')} = '{RunStatus.RUNNING}'"
        f"{' AND ' + scope if scope else ''} GROUP BY {column('concurrency_key')}{having}"
    )
    return statement, params


def begins_sql(
    limit: FlowLimit, now: datetime, binding: int | None = None
) -> tuple[str, list[Any]]:
    """(limit id, 1, bucket's key, begins, oldest begin) in ``limit``'s window at
    ``now``, read through the window's index; ``binding`` as for :func:`running_sql` (a
    limit not per key has one bucket)."""
    assert limit.period is not None
    assert limit.rate is not None
    column = partial(sql.column, FlowBegin)
    params: list[Any] = [sql.prep(FlowBegin, "at", now - limit.period)]
    having = ""
    if binding is not None:
        having = " HAVING COUNT(*) > %s"
        params.append(limit.rate - binding)
    statement = (
        f"SELECT {int(limit.pk)}, 1, {column('key')}, COUNT(*), MIN({column('at')}) "
        f"FROM {sql.table(FlowBegin)} WHERE {column('limit')} = {int(limit.pk)} "
        f"AND {column('at')} > %s GROUP BY {column('key')}{having}"
    )
    return statement, params


def _counts(
    limits: Sequence[FlowLimit], now: datetime, binding: int | None
) -> list[tuple[Any, ...]]:
    """(limit id, rated, bucket's key, count, oldest begin): each limit's
    :func:`running_sql` and :func:`begins_sql` joined by ``UNION ALL``, one round trip."""
    parts: list[str] = []
    params: list[Any] = []
    for limit in limits:
        found = []
        if limit.concurrency is not None:
            found.append(running_sql(limit, binding))
        if limit.rate is not None and limit.period is not None:
            found.append(begins_sql(limit, now, binding))
        for statement, statement_params in found:
            parts.append(statement)
            params += statement_params
    if not parts:
        return []
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        return list(cursor.fetchall())


def _scope_sql(limit: FlowLimit) -> tuple[str, list[Any]]:
    parts, params = [], []
    if limit.job:
        parts.append(f"{sql.column(Run, 'job')} = %s")
        params.append(limit.job)
    if limit.queue:
        parts.append(f"{sql.column(Run, 'queue')} = %s")
        params.append(limit.queue)
    return " AND ".join(parts), params

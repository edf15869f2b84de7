"""What the flow limits leave for one claim, counted under their row locks.

A claim that any limit may concern runs in a transaction that first locks the rows of
those limits (``FOR UPDATE`` on PostgreSQL; on SQLite a write to them takes the
database's one write lock), then counts, for each limit and key, the runs running and
the begins of the last period. Two workers' claims under the same limit therefore take
their turns: the second counts what the first claimed, since the first committed before
it let go of the lock. Claims that no limit concerns never wait for one.

The claim then picks candidates in its usual order, leaving out the limits and keys
already full (in the statement, so that a full key's backlog costs nothing), and
:meth:`Budget.admit` keeps each candidate whose every limit has room, taking that room,
until the claim has enough. The begins it admits under a rate are written as
:class:`~django_weft.models.FlowBegin` rows in the same transaction.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, F, Min, Q, QuerySet

from django_weft.engine.database import sql
from django_weft.models import FlowBegin, FlowLimit, Run, RunStatus

#: How long past its window a begin is kept. A claim's ``now`` is read before it waits
#: for the limits' locks, so a claim may count from a moment earlier than the claim
#: before it; the begins that claim still counts must not be gone.
KEPT = timedelta(minutes=1)

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


def concerning(
    limits: Iterable[FlowLimit], jobs: Iterable[str], queues: Iterable[str] | None
) -> list[FlowLimit]:
    """The limits that may concern a claim of ``jobs`` from ``queues`` (None: any)."""
    names = set(jobs)
    chosen = None if queues is None else set(queues)
    return [
        limit
        for limit in limits
        if (not limit.job or limit.job in names)
        and (chosen is None or not limit.queue or limit.queue in chosen)
    ]


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
    def taken(cls, limits: Sequence[FlowLimit], now: datetime) -> Budget:
        """Lock ``limits`` and count their use, in the caller's transaction."""
        ids = sorted(limit.pk for limit in limits)
        if connection.vendor == "postgresql":
            list(
                FlowLimit.objects.select_for_update()
                .filter(pk__in=ids)
                .order_by("pk")
                .values_list("pk")
            )
        else:
            FlowLimit.objects.filter(pk__in=ids).update(name=F("name"))
        return cls.counted(limits, now)

    @classmethod
    def counted(cls, limits: Sequence[FlowLimit], now: datetime) -> Budget:
        """Count the use of ``limits`` now, without a lock: what a page shows."""
        running: Counter[Bucket] = Counter()
        begun: Counter[Bucket] = Counter()
        oldest: dict[Bucket, datetime] = {}
        for limit in limits:
            if limit.concurrency is not None:
                for key, count in running_by_key(limit):
                    running[bucket(limit, key)] += count
            if limit.rate is not None and limit.period is not None:
                for key, count, first in begins_by_key(limit, now):
                    begun[(limit.pk, key)] += count
                    oldest[(limit.pk, key)] = first
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
            scope, scope_params = _scope_sql(limit)
            if not limit.per_key:
                if self.room(limit, "") <= 0:
                    parts.append(f"NOT ({scope})")
                    params += scope_params
                continue
            full = sorted(
                key
                for (limit_id, key) in {*self._running, *self._begun}
                if limit_id == limit.pk and self.room(limit, key) <= 0
            )
            if full:
                keys = ", ".join(["%s"] * len(full))
                parts.append(f"NOT ({scope} AND {sql.column(Run, 'concurrency_key')} IN ({keys}))")
                params += [*scope_params, *full]
        return " AND ".join(parts), params

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

    def record(self, admitted: Iterable[Candidate], now: datetime) -> None:
        """Write the begins of ``admitted`` under each rate that concerns them, and drop
        the begins no claim will count again (see :data:`KEPT`)."""
        rated = [
            limit for limit in self.limits if limit.rate is not None and limit.period is not None
        ]
        begins = [
            FlowBegin(limit=limit, key=bucket(limit, candidate.key)[1], at=now)
            for candidate in admitted
            for limit in rated
            if covers(limit, candidate.job, candidate.queue)
        ]
        FlowBegin.objects.bulk_create(begins)
        for limit in rated:
            assert limit.period is not None
            if _pruned.due(limit, now):
                FlowBegin.objects.filter(limit=limit, at__lte=now - limit.period - KEPT).delete()


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


def running_by_key(limit: FlowLimit) -> QuerySet[Any, tuple[str, int]]:
    """(key, running runs) of what ``limit`` concerns: the index over running runs."""
    return (
        Run.objects.filter(_scope(limit), status=RunStatus.RUNNING)
        .values_list("concurrency_key")
        .annotate(count=Count("pk"))
        .order_by()
    )


def begins_by_key(limit: FlowLimit, now: datetime) -> QuerySet[Any, tuple[str, int, datetime]]:
    """(key, begins, oldest begin) in ``limit``'s window at ``now``: the window's index."""
    assert limit.period is not None
    window = FlowBegin.objects.filter(limit=limit, at__gt=now - limit.period)
    return window.values_list("key").annotate(count=Count("pk"), oldest=Min("at")).order_by()


def _scope(limit: FlowLimit) -> Q:
    scope = Q()
    if limit.job:
        scope &= Q(job=limit.job)
    if limit.queue:
        scope &= Q(queue=limit.queue)
    return scope


def _scope_sql(limit: FlowLimit) -> tuple[str, list[Any]]:
    parts, params = [], []
    if limit.job:
        parts.append(f"{sql.column(Run, 'job')} = %s")
        params.append(limit.job)
    if limit.queue:
        parts.append(f"{sql.column(Run, 'queue')} = %s")
        params.append(limit.queue)
    return " AND ".join(parts), params

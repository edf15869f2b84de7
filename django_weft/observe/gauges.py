"""What the metrics read from the database at each scrape: a few cheap queries.

Prometheus may scrape every 5 seconds, with 10,000,000 finished runs stored, so nothing
here reads finished runs. Each query is bounded by what is *unfinished* or *alive*, and
each walks an index (tests/observe/test_gauges.py reads PostgreSQL's plans):

- queued runs, grouped by queue, job and version, for the depth, the blocked runs (of a
  job or version this code does not define: no worker of it claims them, so they are
  left out of the oldest wait) and the oldest wait: the rows of the
  partial indexes over queued runs (the claim's ``weft_run_claim`` among them), so its
  cost grows with the backlog, never with the history;
- running runs, grouped by job: at most the workers' concurrency;
- waiting runs (asleep, or waiting for a signal), grouped by job: the rows of the
  status index (``weft_run_status_newest``) for ``waiting``, which holds no finished run;
- live workers: the partial index ``weft_worker_alive`` over workers not stopped;
- paused queues: one row per paused queue;
- flow limits: their use (runs running, begins in the window) by limit and key, as the
  claim counts it; queued runs a full limit holds back are counted apart and left out
  of the oldest wait, since they wait by design.

Counts of what happened (runs finished, fires, ...) are never counted here: each process
counts its own events (:mod:`django_weft.observe.metrics`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Min, Q, QuerySet, Value
from django.db.models.functions import Coalesce

from django_weft.conf import weft_settings
from django_weft.engine.limits.budget import LIMITING, Budget, left_in
from django_weft.jobs.registry import registry
from django_weft.models import FlowLimit, PausedQueue, Run, RunStatus, WorkerProcess


@dataclass(frozen=True)
class QueueState:
    """One queue as a scrape sees it."""

    queue: str
    #: Queued runs, those waiting for a retry or a ``run_after`` included.
    depth: int
    #: Seconds the longest-waiting claimable run has waited (since it was started, or
    #: since its retry came due); 0 when no run of the queue may be claimed now.
    oldest_wait: float
    paused: bool
    #: Queued runs a flow limit holds back now (in ``depth``, not in ``oldest_wait``).
    held: int = 0
    #: Queued runs of a job or version not deployed here (in ``depth``, not in
    #: ``oldest_wait``): they wait for a deploy, not for a worker.
    blocked: int = 0


@dataclass(frozen=True)
class LimitUse:
    """A flow limit as a scrape sees it: what it allows, and its busiest key's use."""

    name: str
    concurrency: int | None
    running: int
    rate: int | None
    begun: int


@dataclass(frozen=True)
class Snapshot:
    """Everything a scrape reads from the database, at ``now``."""

    queues: list[QueueState]
    #: Running runs by job.
    running: dict[str, int]
    #: Waiting runs (asleep, or waiting for a signal) by job.
    waiting: dict[str, int]
    #: Workers that beat within ``WEFT_LOST_AFTER`` and did not stop.
    live_workers: int
    limits: list[LimitUse]


def queued_by_queue(now: datetime, free: Budget | None = None) -> QuerySet[Any, Any]:
    """Per queue, job and job version: its queued runs (``depth``), those the flow
    limits of ``free`` hold back now (``held``), and when its longest-waiting claimable
    run that no limit holds became claimable (``ready_since``, None when none is
    claimable yet)."""
    claimable = Q(retry_at__isnull=True) | Q(retry_at__lte=now)
    exclusions, params = free.exclusions() if free is not None else ("", [])
    if exclusions:
        unheld = left_in(exclusions, params)
        held: Any = Count("pk", filter=~Q(unheld))
        claimable &= Q(unheld)
    else:
        held = Value(0)
    return (
        Run.objects.filter(status=RunStatus.QUEUED)
        .order_by()
        .values("queue", "job", "job_version")
        .annotate(
            depth=Count("pk"),
            held=held,
            ready_since=Min(Coalesce("retry_at", "created_at"), filter=claimable),
        )
    )


def runs_by_job(status: RunStatus) -> QuerySet[Any, Any]:
    """Per job: how many of its runs have ``status`` (an unfinished one), as ``runs``."""
    return Run.objects.filter(status=status).order_by().values("job").annotate(runs=Count("pk"))


def counted_by_job(status: RunStatus) -> dict[str, int]:
    return {row["job"]: int(row["runs"]) for row in runs_by_job(status)}


def live_workers(now: datetime) -> QuerySet[WorkerProcess]:
    """The workers other workers still count as alive at ``now``."""
    silent_after = now - timedelta(seconds=weft_settings.LOST_AFTER)
    return WorkerProcess.objects.filter(stopped_at__isnull=True, last_beat__gte=silent_after)


def snapshot(now: datetime) -> Snapshot:
    """Read the gauges' values at ``now`` (six queries, and a count or two for each flow
    limit; none over finished runs).

    Every queue a registered job uses or that is paused is listed, with a depth of 0
    when it holds no run: a gauge that vanishes when its queue drains reads as no data.
    """
    paused = set(PausedQueue.objects.values_list("queue", flat=True))
    limits = list(FlowLimit.objects.filter(LIMITING).order_by("name"))
    budget = Budget.counted(limits, now) if limits else None
    depth: Counter[str] = Counter()
    held: Counter[str] = Counter()
    blocked: Counter[str] = Counter()
    ready_since: dict[str, datetime] = {}
    for row in queued_by_queue(now, budget):
        queue = row["queue"]
        depth[queue] += row["depth"]
        held[queue] += row["held"]
        if registry.deployed(row["job"], row["job_version"]) is None:
            blocked[queue] += row["depth"]
        elif row["ready_since"] is not None:
            ready_since[queue] = min(row["ready_since"], ready_since.get(queue, row["ready_since"]))
    names = sorted({job.queue for job in registry} | paused | set(depth))
    queues = [
        QueueState(
            queue=name,
            depth=depth[name],
            oldest_wait=max(0.0, (now - ready_since[name]).total_seconds())
            if name in ready_since
            else 0.0,
            paused=name in paused,
            held=held[name],
            blocked=blocked[name],
        )
        for name in names
    ]
    return Snapshot(
        queues=queues,
        running=counted_by_job(RunStatus.RUNNING),
        waiting=counted_by_job(RunStatus.WAITING),
        live_workers=live_workers(now).count(),
        limits=[
            LimitUse(
                limit.name,
                limit.concurrency,
                budget.busiest(limit, "running"),
                limit.rate,
                budget.busiest(limit, "begun"),
            )
            for limit in limits
            if budget is not None
        ],
    )

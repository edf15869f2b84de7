"""Every figure of the overview page, read in one place with a fixed number of queries.

:func:`read_overview` asks the database eleven questions, whatever the number of runs,
queues, workers or schedules: the unfinished runs grouped by queue, status, job version
and concurrency key; the paused queues and who paused them; the history of the chosen
range (four, :mod:`django_weft.console.history`); the live workers; what they run; the
schedules due within the hour (read by :mod:`django_weft.engine.schedules.previews`,
planned by :mod:`django_weft.timing.preview`); the day's failures grouped by error
(:mod:`django_weft.console.failures`); the flow limits,
each of which (they are few) adds two counts, and one count of what they hold back.
None of them counts the run table: each reads an index over the unfinished runs, the
failures or a range of ``finished_at``. ``now`` is handed in (the project's clock, as
for the schedules' next fires), so the figures can be tested at any moment.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Min, Q

from django_weft.conf import weft_settings
from django_weft.console.failures import FailureGroup, failure_groups
from django_weft.console.history import DEFAULT_SPAN, DEFAULT_SPLIT, History, read_history
from django_weft.engine.limits.budget import Budget, left_in
from django_weft.engine.schedules.previews import enabled_schedules
from django_weft.jobs.registry import registry
from django_weft.models import FlowLimit, PausedQueue, Run, RunStatus, WorkerProcess
from django_weft.timing.preview import PreviewLine, preview

#: How many live workers and coming fires the page lists.
WORKERS_SHOWN = 50
FIRES_SHOWN = 20
#: How far ahead the coming fires are listed.
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class Limit:
    """A job's concurrency limit and its use now: per key, the unfinished runs that hold
    it (queued or running: a start is refused while ``limit`` of them exist) and how many
    of those run."""

    job: str
    limit: int
    keyed: bool
    #: ``(key, holding, running)`` per key in use, the fullest first, then the one with
    #: most running ("" unkeyed).
    uses: tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class FlowUse:
    """A flow limit and its use now: the busiest key's running runs and begins in the
    rate's window (of ``concurrency`` and ``rate``), and the queued runs it holds back."""

    id: int
    name: str
    #: What it limits: a job ("" any), a queue ("" any), each key apart or not.
    job: str
    queue: str
    per_key: bool
    concurrency: int | None
    running: int
    rate: int | None
    begun: int
    held: int
    fair_share: bool


@dataclass(frozen=True)
class Queue:
    """A queue now: its queued runs a worker here could run (``queued``, the oldest of
    them ``oldest_waiting``), those of a job or version not deployed here (``blocked``:
    no worker of this code claims them, so they are no measure of the workers' lag),
    and its running runs."""

    name: str
    queued: int = 0
    blocked: int = 0
    running: int = 0
    oldest_waiting: datetime | None = None
    paused_at: datetime | None = None
    #: The username of who paused it ("" when that user is gone, or code paused it).
    paused_by: str = ""
    #: The flow limit of how many of its runs run at once, whatever their job and key:
    #: the queue's concurrency, changed live from the overview (None: no such limit).
    at_once: FlowUse | None = None

    @property
    def paused(self) -> bool:
        return self.paused_at is not None


@dataclass(frozen=True)
class Worker:
    id: str
    name: str
    started_at: datetime
    last_beat: datetime
    silent: bool
    #: Quieted by an operator: it takes no new work.
    quiet: bool
    #: ``(run id, job)`` of each run it holds.
    runs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Overview:
    now: datetime
    #: Runs by phase now: queued, blocked (queued, its job version not deployed here),
    #: running, waiting (asleep or awaiting a signal: holding no worker).
    unfinished: dict[str, int]
    history: History
    queues: list[Queue]
    limits: list[Limit]
    flow_limits: list[FlowUse]
    workers: list[Worker]
    fires: list[PreviewLine]
    failures: list[FailureGroup]
    #: Whether more of each list exist than are shown.
    more_workers: bool = False
    more_fires: bool = False


def read_overview(now: datetime, span: str = DEFAULT_SPAN, split: str = DEFAULT_SPLIT) -> Overview:
    """The overview at ``now`` (aware), its history over ``span`` split by ``split``
    (keys of :data:`~django_weft.console.history.SPANS` and ``SPLITS``), in eleven queries
    and a few for each flow limit."""
    now = now.astimezone(UTC)
    unfinished, queues, limits = _unfinished(now)
    workers = _workers(now)
    fires = _fires(now)
    flow_limits = _flow_limits(now)
    at_once = {
        use.queue: use
        for use in flow_limits
        if use.queue and not use.job and not use.per_key and use.concurrency is not None
    }
    return Overview(
        now=now,
        unfinished=unfinished,
        history=read_history(now, span, split),
        queues=[replace(queue, at_once=at_once.get(queue.name)) for queue in queues],
        limits=limits,
        flow_limits=flow_limits,
        workers=workers[:WORKERS_SHOWN],
        more_workers=len(workers) > WORKERS_SHOWN,
        fires=fires[:FIRES_SHOWN],
        more_fires=len(fires) > FIRES_SHOWN,
        failures=failure_groups(now),
    )


def _unfinished(now: datetime) -> tuple[dict[str, int], list[Queue], list[Limit]]:
    """Counts by phase now, each queue's depth, blocked runs and oldest queued run, and
    the use of each concurrency limit (two queries)."""
    counts: Counter[str] = Counter({"queued": 0, "blocked": 0, "running": 0, "waiting": 0})
    depth: Counter[str] = Counter()
    blocked: Counter[str] = Counter()
    running: Counter[str] = Counter()
    oldest: dict[str, datetime] = {}
    holding: Counter[tuple[str, str]] = Counter()
    holding_running: Counter[tuple[str, str]] = Counter()
    rows = (
        Run.objects.unfinished()
        .order_by()
        .values("queue", "status", "job", "job_version", "concurrency_key")
        .annotate(runs=Count("id"), oldest=Min("created_at"))
    )
    for row in rows:
        queue, number = row["queue"], row["runs"]
        holding[(row["job"], row["concurrency_key"])] += number
        if row["status"] == RunStatus.RUNNING:
            holding_running[(row["job"], row["concurrency_key"])] += number
            counts["running"] += number
            running[queue] += number
        elif row["status"] == RunStatus.WAITING:
            counts["waiting"] += number  # asleep or awaiting a signal: in no queue's line
        elif registry.deployed(row["job"], row["job_version"]) is None:
            counts["blocked"] += number
            blocked[queue] += number
        else:
            counts["queued"] += number
            depth[queue] += number
            if queue not in oldest or row["oldest"] < oldest[queue]:
                oldest[queue] = row["oldest"]
    pauser = f"paused_by__{get_user_model().USERNAME_FIELD}"
    paused = {
        queue: (at, by or "")
        for queue, at, by in PausedQueue.objects.values_list("queue", "paused_at", pauser)
    }
    # Every queue a deployed job uses is listed, so an idle one can be paused ahead.
    names = {job.queue for job in registry} | set(depth) | set(blocked) | set(running) | set(paused)
    queues = [
        Queue(
            name=name,
            queued=depth[name],
            blocked=blocked[name],
            running=running[name],
            oldest_waiting=oldest.get(name),
            paused_at=paused[name][0] if name in paused else None,
            paused_by=paused[name][1] if name in paused else "",
        )
        for name in sorted(names)
    ]
    return dict(counts), queues, _limits(holding, holding_running)


def _limits(holding: Counter[tuple[str, str]], running: Counter[tuple[str, str]]) -> list[Limit]:
    """Every deployed job with a concurrency limit, and the keys its runs hold now."""
    limits = []
    for job in sorted(registry, key=lambda job: job.name):
        if job.concurrency is None:
            continue
        uses = sorted(
            (
                (key, held, running[(name, key)])
                for (name, key), held in holding.items()
                if name == job.name
            ),
            key=lambda use: (-use[1], -use[2], use[0]),
        )
        limits.append(
            Limit(
                job=job.name,
                limit=job.concurrency,
                keyed=job.concurrency_key is not None,
                uses=tuple(uses),
            )
        )
    return limits


def _flow_limits(now: datetime) -> list[FlowUse]:
    """Every flow limit with its use now (two counts for each, and one count of what
    each holds back over the queued runs)."""
    rows = list(FlowLimit.objects.order_by("name"))
    counting = [row for row in rows if row.concurrency is not None or row.rate is not None]
    budget = Budget.counted(counting, now)
    held: dict[str, Any] = {}
    for limit in budget.limits:
        exclusion, params = budget.exclusion(limit)
        if exclusion:
            held[f"held{limit.pk}"] = Count("pk", filter=~Q(left_in(exclusion, params)))
    counts = Run.objects.filter(status=RunStatus.QUEUED).aggregate(**held) if held else {}
    return [
        FlowUse(
            id=row.pk,
            name=row.name,
            job=row.job,
            queue=row.queue,
            per_key=row.per_key,
            concurrency=row.concurrency,
            running=budget.busiest(row, "running"),
            rate=row.rate,
            begun=budget.busiest(row, "begun"),
            held=int(counts.get(f"held{row.pk}", 0)),
            fair_share=row.fair_share,
        )
        for row in rows
    ]


def _workers(now: datetime) -> list[Worker]:
    """The workers that have not stopped, the most recent beat first, with their runs."""
    rows = list(
        WorkerProcess.objects.filter(stopped_at__isnull=True).order_by("-last_beat")[
            : WORKERS_SHOWN + 1
        ]
    )
    held: dict[object, list[tuple[str, str]]] = defaultdict(list)
    for run_id, worker_id, job in (
        Run.objects.filter(status=RunStatus.RUNNING, worker__in=[row.pk for row in rows])
        .order_by("started_at")
        .values_list("id", "worker_id", "job")
    ):
        held[worker_id].append((str(run_id), job))
    silent_since = now - timedelta(seconds=weft_settings.LOST_AFTER)
    return [
        Worker(
            id=str(row.pk),
            name=str(row),
            started_at=row.started_at,
            last_beat=row.last_beat,
            silent=row.last_beat < silent_since,
            quiet=row.quiet,
            runs=tuple(held[row.pk]),
        )
        for row in rows
    ]


def _fires(now: datetime) -> list[PreviewLine]:
    """What the enabled schedules fire within the hour (their DST-skipped slots left out).

    Only rows due within the hour, or not armed yet, are read: the cost stays that of the
    coming fires, not of every schedule.
    """
    rows = enabled_schedules(due_by=now + HOUR)
    return [line for line in preview(now, HOUR, rows) if line.fires or line.note == "error"]

"""Every figure of the overview page, read in one place with a fixed number of queries.

:func:`read_overview` asks the database ten questions, whatever the number of runs,
queues, workers or schedules: the unfinished runs grouped by queue, status, job version
and concurrency key; the paused queues and who paused them; the history of the chosen
range (four, :mod:`django_weft.console.history`); the live workers; what they run; the
schedules due within the hour (read by :mod:`django_weft.engine.schedules.previews`, planned by
:mod:`django_weft.timing.preview`); the latest failures. None of them counts the run
table: each reads an index over the unfinished runs, the failures or a range of
``finished_at``. ``now`` is handed in (the project's clock, as for the schedules' next
fires), so the figures can be tested at any moment.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.db.models import Count, Min

from django_weft.conf import weft_settings
from django_weft.console.history import DEFAULT_SPAN, DEFAULT_SPLIT, FAILURES, History, read_history
from django_weft.engine.schedules.previews import enabled_schedules
from django_weft.jobs.registry import registry
from django_weft.models import PausedQueue, Run, RunStatus, WorkerProcess
from django_weft.timing.preview import PreviewLine, preview

#: How many recent failures, live workers and coming fires the page lists.
RECENT_FAILURES = 10
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
    #: ``(key, holding, running)`` per key in use, the fullest first ("" unkeyed).
    uses: tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class Queue:
    name: str
    queued: int = 0
    running: int = 0
    oldest_waiting: datetime | None = None
    paused_at: datetime | None = None
    #: The username of who paused it ("" when that user is gone, or code paused it).
    paused_by: str = ""

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
    #: ``(run id, job)`` of each run it holds.
    runs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Failure:
    id: str
    job: str
    status: str
    finished_at: datetime | None
    error_type: str
    error_message: str


@dataclass(frozen=True)
class Overview:
    now: datetime
    #: Runs by status now: queued, blocked (queued, its job version not deployed here),
    #: running.
    unfinished: dict[str, int]
    history: History
    queues: list[Queue]
    limits: list[Limit]
    workers: list[Worker]
    fires: list[PreviewLine]
    failures: list[Failure]
    #: Whether more of each list exist than are shown.
    more_workers: bool = False
    more_fires: bool = False


def read_overview(now: datetime, span: str = DEFAULT_SPAN, split: str = DEFAULT_SPLIT) -> Overview:
    """The overview at ``now`` (aware), its history over ``span`` split by ``split``
    (keys of :data:`~django_weft.console.history.SPANS` and ``SPLITS``), in ten queries."""
    now = now.astimezone(UTC)
    unfinished, queues, limits = _unfinished(now)
    workers = _workers(now)
    fires = _fires(now)
    return Overview(
        now=now,
        unfinished=unfinished,
        history=read_history(now, span, split),
        queues=queues,
        limits=limits,
        workers=workers[:WORKERS_SHOWN],
        more_workers=len(workers) > WORKERS_SHOWN,
        fires=fires[:FIRES_SHOWN],
        more_fires=len(fires) > FIRES_SHOWN,
        failures=_failures(),
    )


def _unfinished(now: datetime) -> tuple[dict[str, int], list[Queue], list[Limit]]:
    """Counts by status now, each queue's depth and oldest waiting run, and the use of
    each concurrency limit (two queries)."""
    counts: Counter[str] = Counter({"queued": 0, "blocked": 0, "running": 0})
    depth: Counter[str] = Counter()
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
            continue
        deployed = registry.deployed(row["job"], row["job_version"]) is not None
        counts["queued" if deployed else "blocked"] += number
        depth[queue] += number
        if queue not in oldest or row["oldest"] < oldest[queue]:
            oldest[queue] = row["oldest"]
    pauser = f"paused_by__{get_user_model().USERNAME_FIELD}"
    paused = {
        queue: (at, by or "")
        for queue, at, by in PausedQueue.objects.values_list("queue", "paused_at", pauser)
    }
    # Every queue a deployed job uses is listed, so an idle one can be paused ahead.
    names = {job.queue for job in registry} | set(depth) | set(running) | set(paused)
    queues = [
        Queue(
            name=name,
            queued=depth[name],
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
            key=lambda use: (-use[1], use[0]),
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


def _failures() -> list[Failure]:
    rows = (
        Run.objects.filter(status__in=FAILURES, finished_at__isnull=False)
        .order_by("-finished_at")
        .only("id", "job", "status", "finished_at", "error_type", "error_message")[:RECENT_FAILURES]
    )
    return [
        Failure(
            id=str(row.pk),
            job=row.job,
            status=str(row.status),
            finished_at=row.finished_at,
            error_type=row.error_type,
            error_message=row.error_message,
        )
        for row in rows
    ]

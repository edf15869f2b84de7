"""Every figure of the overview page, read in one place with a fixed number of queries.

:func:`read_overview` asks the database seven questions, whatever the number of runs,
queues, workers or schedules: the unfinished runs grouped by queue, status and job
version; the runs finished over the last day grouped by minute and status; the paused
queues and who paused them; the live workers; what they run; the schedules due within
the hour (read by :mod:`django_weft.engine.previews`, planned by
:mod:`django_weft.timing.preview`); the latest failures. ``now`` is handed in (the
project's clock, as for the schedules' next fires), so the figures can be tested at any
moment.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.db.models import Count, Min
from django.db.models.functions import TruncMinute

from django_weft.conf import weft_settings
from django_weft.engine.previews import enabled_schedules
from django_weft.jobs.registry import registry
from django_weft.models import PausedQueue, Run, RunStatus, WorkerProcess
from django_weft.timing.preview import PreviewLine, preview

#: Outcomes counted as failures on the charts and in the list of recent failures.
FAILURES = (RunStatus.FAILED, RunStatus.LOST)
#: How many recent failures, live workers and coming fires the page lists.
RECENT_FAILURES = 10
WORKERS_SHOWN = 50
FIRES_SHOWN = 20
#: The charts: the last hour by the minute, the last day by ten minutes.
HOUR, DAY = timedelta(hours=1), timedelta(days=1)
DAY_BUCKET_MINUTES = 10


@dataclass(frozen=True)
class Bucket:
    """One bar of a chart: the runs that finished in ``[start, start + minutes)``."""

    start: datetime
    minutes: int
    finished: int
    failed: int

    @property
    def finished_per_minute(self) -> float:
        return self.finished / self.minutes

    @property
    def failed_per_minute(self) -> float:
        return self.failed / self.minutes


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
    #: running; and by outcome over the last day.
    unfinished: dict[str, int]
    finished_last_day: dict[str, int]
    last_hour: list[Bucket]
    last_day: list[Bucket]
    queues: list[Queue]
    workers: list[Worker]
    fires: list[PreviewLine]
    failures: list[Failure]
    #: Whether more of each list exist than are shown.
    more_workers: bool = False
    more_fires: bool = False


def read_overview(now: datetime) -> Overview:
    """The overview at ``now`` (aware), in seven queries."""
    now = now.astimezone(UTC)
    unfinished, queues = _unfinished(now)
    last_hour, last_day, finished = _charts(now)
    workers = _workers(now)
    fires = _fires(now)
    return Overview(
        now=now,
        unfinished=unfinished,
        finished_last_day=finished,
        last_hour=last_hour,
        last_day=last_day,
        queues=queues,
        workers=workers[:WORKERS_SHOWN],
        more_workers=len(workers) > WORKERS_SHOWN,
        fires=fires[:FIRES_SHOWN],
        more_fires=len(fires) > FIRES_SHOWN,
        failures=_failures(),
    )


def _unfinished(now: datetime) -> tuple[dict[str, int], list[Queue]]:
    """Counts by status now, and each queue's depth and oldest waiting run (two queries)."""
    counts: Counter[str] = Counter({"queued": 0, "blocked": 0, "running": 0})
    depth: Counter[str] = Counter()
    running: Counter[str] = Counter()
    oldest: dict[str, datetime] = {}
    rows = (
        Run.objects.unfinished()
        .order_by()
        .values("queue", "status", "job", "job_version")
        .annotate(runs=Count("id"), oldest=Min("created_at"))
    )
    for row in rows:
        queue, number = row["queue"], row["runs"]
        if row["status"] == RunStatus.RUNNING:
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
    return dict(counts), queues


def _charts(now: datetime) -> tuple[list[Bucket], list[Bucket], dict[str, int]]:
    """The runs finished per minute over the last hour and day, and the day's outcomes."""
    end = now.replace(second=0, microsecond=0) + timedelta(minutes=1)
    rows = (
        Run.objects.finished()
        .filter(finished_at__gte=end - DAY, finished_at__lt=end)
        .order_by()
        .annotate(minute=TruncMinute("finished_at", tzinfo=UTC))
        .values("minute", "status")
        .annotate(runs=Count("id"))
    )
    finished: dict[datetime, int] = defaultdict(int)
    failed: dict[datetime, int] = defaultdict(int)
    outcomes: Counter[str] = Counter({str(status): 0 for status in RunStatus})
    for row in rows:
        minute = row["minute"].astimezone(UTC)
        outcomes[row["status"]] += row["runs"]
        (failed if row["status"] in FAILURES else finished)[minute] += row["runs"]
    for status in (RunStatus.QUEUED, RunStatus.RUNNING):
        del outcomes[str(status)]
    return (
        _buckets(end - HOUR, 60, 1, finished, failed),
        _buckets(end - DAY, 24 * 60 // DAY_BUCKET_MINUTES, DAY_BUCKET_MINUTES, finished, failed),
        dict(outcomes),
    )


def _buckets(
    start: datetime,
    count: int,
    minutes: int,
    finished: dict[datetime, int],
    failed: dict[datetime, int],
) -> list[Bucket]:
    buckets = []
    for index in range(count):
        begins = start + timedelta(minutes=index * minutes)
        covered = [begins + timedelta(minutes=offset) for offset in range(minutes)]
        buckets.append(
            Bucket(
                start=begins,
                minutes=minutes,
                finished=sum(finished.get(minute, 0) for minute in covered),
                failed=sum(failed.get(minute, 0) for minute in covered),
            )
        )
    return buckets


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

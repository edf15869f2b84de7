"""weft's Prometheus metrics: what this process saw happen, and what the database holds.

Two kinds, with two costs (docs/metrics.md):

- **Counters and histograms** count this process's own events, from the signals weft
  sends (:mod:`django_weft.signals`): runs started and finished, fires and their
  lateness, the workers' outages, sandbox calls. They cost nothing at scrape time and
  nothing in the database; each process has its own, so Prometheus scrapes every
  ``runjobs`` (over ``--http``) and sums them.
- **Gauges** are read from the database at each scrape
  (:mod:`django_weft.observe.gauges`): queue depth and oldest wait, running and waiting
  runs, live workers. The same in every process; a query over ``max`` of them takes one.

Everything is in :data:`REGISTRY`, weft's own, not prometheus_client's default one, so a
project's metrics and weft's never collide; a project that serves its own endpoint can
add ``REGISTRY``'s collectors to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from functools import cache
from typing import Any

from django.db import DatabaseError
from django.dispatch import Signal
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from django_weft.models import Run
from django_weft.observe import gauges
from django_weft.signals import (
    group_ended,
    outage_ended,
    outage_started,
    run_finished,
    run_started,
    sandbox_called,
    workflow_ended,
)
from django_weft.timing import clocks

#: Jobs take from milliseconds to an hour: buckets from 50 ms to an hour.
DURATION_BUCKETS = (0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, float("inf"))
#: A fire is on time within a poll interval or two; minutes late is an outage or a backlog.
LATENESS_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600, float("inf"))
#: A sandbox call takes a child's start-up (tens of ms) up to its wall-clock limit.
SANDBOX_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, float("inf"))

REGISTRY = CollectorRegistry()

RUNS_STARTED = Counter(
    "weft_runs_started",
    "Runs this process started (calls, the API, fires, finish hooks), by job and queue.",
    ["job", "queue"],
    registry=REGISTRY,
)
RUNS_FINISHED = Counter(
    "weft_runs_finished",
    "Runs this process finished, by job and final status (done, failed, aborted, lost).",
    ["job", "status"],
    registry=REGISTRY,
)
GROUPS_ENDED = Counter(
    "weft_groups_ended",
    "Groups whose last member this process finished, by outcome (done: every member "
    "done; failed: any other).",
    ["outcome"],
    registry=REGISTRY,
)
WORKFLOWS_ENDED = Counter(
    "weft_workflows_ended",
    "Workflows whose last step this process finished, by outcome (done, failed, aborted).",
    ["outcome"],
    registry=REGISTRY,
)
RUN_DURATION = Histogram(
    "weft_run_duration_seconds",
    "From the claim of a run's last attempt to its finish, for runs this process finished.",
    ["job"],
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
FIRES = Counter(
    "weft_fires",
    "Runs this process started for a schedule's slot (its fires and run-nows), by job.",
    ["job"],
    registry=REGISTRY,
)
FIRE_LATENESS = Histogram(
    "weft_fire_lateness_seconds",
    "How long after its slot's due time each fire of this process started its run.",
    ["job"],
    buckets=LATENESS_BUCKETS,
    registry=REGISTRY,
)
OUTAGES = Counter(
    "weft_outages",
    "Database outages this process's worker loop went through (a streak of failed steps).",
    registry=REGISTRY,
)
OUTAGE_SECONDS = Counter(
    "weft_outage_seconds",
    "Seconds this process's worker loop spent in outages that ended.",
    registry=REGISTRY,
)
OUTAGE_ONGOING = Gauge(
    "weft_outage_ongoing",
    "Worker loops of this process in an outage now (0 or 1 for one runjobs).",
    registry=REGISTRY,
)
SANDBOX_CALLS = Counter(
    "weft_sandbox_calls",
    'Stored modules\' calls in this process\'s sandbox, by outcome ("ok", "aborted", '
    '"error", or the SandboxError it failed with: "LimitExceeded", ...).',
    ["outcome"],
    registry=REGISTRY,
)
SANDBOX_SECONDS = Histogram(
    "weft_sandbox_call_seconds",
    "How long each sandbox call of this process took, the child's start included.",
    buckets=SANDBOX_BUCKETS,
    registry=REGISTRY,
)
ProcessCollector(registry=REGISTRY)


class DatabaseCollector(Collector):
    """The gauges read from the database at each scrape (:func:`gauges.snapshot`).

    A database that does not answer makes ``weft_database_up`` 0 and the other gauges
    absent, rather than failing the whole scrape: the counters still tell what happened.
    """

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "weft_database_up", "Whether the scrape could read the gauges from the database."
        )
        try:
            snapshot = gauges.snapshot(clocks.now())
        except DatabaseError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _gauges(snapshot)

    def describe(self) -> Iterator[Metric]:
        """Nothing: describing would read the database when the collector is registered."""
        return iter(())


def _gauges(snapshot: gauges.Snapshot) -> Iterator[Metric]:
    depth = GaugeMetricFamily(
        "weft_queue_depth", "Queued runs, those waiting for a retry included.", labels=["queue"]
    )
    wait = GaugeMetricFamily(
        "weft_queue_oldest_waiting_seconds",
        "How long the longest-waiting claimable run of the queue has waited.",
        labels=["queue"],
    )
    paused = GaugeMetricFamily(
        "weft_queue_paused", "1 while the queue is paused, else 0.", labels=["queue"]
    )
    held = GaugeMetricFamily(
        "weft_queue_held_runs",
        "Queued runs a flow limit holds back now (left out of the oldest wait).",
        labels=["queue"],
    )
    blocked = GaugeMetricFamily(
        "weft_queue_blocked_runs",
        "Queued runs of a job or version the code of this process does not define (left "
        "out of the oldest wait): they wait for a deploy.",
        labels=["queue"],
    )
    for queue in snapshot.queues:
        depth.add_metric([queue.queue], queue.depth)
        wait.add_metric([queue.queue], queue.oldest_wait)
        paused.add_metric([queue.queue], 1 if queue.paused else 0)
        held.add_metric([queue.queue], queue.held)
        blocked.add_metric([queue.queue], queue.blocked)
    running = GaugeMetricFamily("weft_runs_running", "Running runs, by job.", labels=["job"])
    for job, count in sorted(snapshot.running.items()):
        running.add_metric([job], count)
    workers = GaugeMetricFamily(
        "weft_workers_live", "runjobs processes that beat within WEFT_LOST_AFTER."
    )
    workers.add_metric([], snapshot.live_workers)
    waiting = GaugeMetricFamily(
        "weft_runs_waiting",
        "Waiting runs (asleep, or waiting for a signal), by job: they hold no worker.",
        labels=["job"],
    )
    for job, count in sorted(snapshot.waiting.items()):
        waiting.add_metric([job], count)
    yield from (depth, wait, paused, held, blocked, running, waiting, workers)
    yield from _limit_gauges(snapshot.limits)


def _limit_gauges(limits: list[gauges.LimitUse]) -> Iterator[Metric]:
    """Each flow limit's bounds and use now (its busiest key's, for a limit per key)."""
    allowed = GaugeMetricFamily(
        "weft_limit_allowed",
        "What a flow limit allows: runs at once (concurrency), or begins a period (rate).",
        labels=["limit", "kind"],
    )
    used = GaugeMetricFamily(
        "weft_limit_used",
        "A flow limit's use now: runs running (concurrency), or begins in its window (rate).",
        labels=["limit", "kind"],
    )
    for limit in limits:
        if limit.concurrency is not None:
            allowed.add_metric([limit.name, "concurrency"], limit.concurrency)
            used.add_metric([limit.name, "concurrency"], limit.running)
        if limit.rate is not None:
            allowed.add_metric([limit.name, "rate"], limit.rate)
            used.add_metric([limit.name, "rate"], limit.begun)
    yield from (allowed, used)


REGISTRY.register(DatabaseCollector())


#: The Content-Type of :func:`exposition`'s text.
CONTENT_TYPE = CONTENT_TYPE_LATEST


def exposition() -> bytes:
    """Every metric of :data:`REGISTRY` in Prometheus's text format."""
    return generate_latest(REGISTRY)


def _seconds(later: datetime | None, earlier: datetime | None) -> float | None:
    if later is None or earlier is None:
        return None
    return max(0.0, (later - earlier).total_seconds())


def count_started(sender: Any, run: Run, **kwargs: Any) -> None:
    RUNS_STARTED.labels(job=run.job, queue=run.queue).inc()
    if run.schedule_id is not None:
        FIRES.labels(job=run.job).inc()
        lateness = _seconds(run.created_at, run.due)
        if lateness is not None:
            FIRE_LATENESS.labels(job=run.job).observe(lateness)


def count_finished(sender: Any, run: Run, **kwargs: Any) -> None:
    RUNS_FINISHED.labels(job=run.job, status=str(run.status)).inc()
    duration = _seconds(run.finished_at, run.started_at)
    if duration is not None:
        RUN_DURATION.labels(job=run.job).observe(duration)


def count_outage(sender: Any, **kwargs: Any) -> None:
    OUTAGES.inc()
    OUTAGE_ONGOING.inc()


def count_outage_end(sender: Any, seconds: float, **kwargs: Any) -> None:
    OUTAGE_SECONDS.inc(seconds)
    OUTAGE_ONGOING.dec()


def count_sandbox_call(sender: Any, outcome: str, seconds: float, **kwargs: Any) -> None:
    SANDBOX_CALLS.labels(outcome=outcome).inc()
    SANDBOX_SECONDS.observe(seconds)


def count_group_ended(sender: Any, outcome: str, **kwargs: Any) -> None:
    GROUPS_ENDED.labels(outcome=outcome).inc()


def count_workflow_ended(sender: Any, outcome: str, **kwargs: Any) -> None:
    WORKFLOWS_ENDED.labels(outcome=outcome).inc()


#: Each signal the counters count, its receiver, and the receiver's dispatch uid.
RECEIVERS: tuple[tuple[Signal, Callable[..., None], str], ...] = (
    (run_started, count_started, "django_weft.metrics.started"),
    (run_finished, count_finished, "django_weft.metrics.finished"),
    (group_ended, count_group_ended, "django_weft.metrics.group_ended"),
    (workflow_ended, count_workflow_ended, "django_weft.metrics.workflow_ended"),
    (outage_started, count_outage, "django_weft.metrics.outage"),
    (outage_ended, count_outage_end, "django_weft.metrics.outage_end"),
    (sandbox_called, count_sandbox_call, "django_weft.metrics.sandbox"),
)


@cache
def connect() -> None:
    """Count weft's signals from now on: once, when the app is ready, or at the first
    scrape of a process that had no prometheus_client when it started (it was installed
    into a running server), so its counters count from then on instead of never."""
    for signal, receiver, uid in RECEIVERS:
        signal.connect(receiver, dispatch_uid=uid)

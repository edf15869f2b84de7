"""What ``compare.py`` measures, in which configurations, and where the results go.

One repeat is: the commit ceiling; every throughput configuration with 1 worker
process, then every one with 2; each system's latency; django-weft's start rates
(``start()`` and ``start_many()``, with and without a channel layer); the fan-out to
guest sockets. The first repeat also measures django-weft's due fires and the idle
ticks of django-weft and django-celery-beat: figures of one system each, compared
with no other, which repeats would only make the run longer. Systems alternate within
each figure (A/B/C, A/B/C), and the whole repeat runs ``--repeat`` times.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _setup
import compare_children
import compare_server

#: Worker processes that drain the queue in the throughput measurements.
WORKER_COUNTS = (1, 2)
#: CONN_MAX_AGE for persistent connections: ten minutes, longer than any measurement.
PERSISTENT = 600


def capped(size: int, at_most: int | None) -> int:
    """``size``, or ``at_most`` where a configuration caps it lower."""
    return size if at_most is None else min(size, at_most)


@dataclass(frozen=True)
class Throughput:
    """A system's worker, configured one way.

    ``jobs_at_most`` caps the jobs of a drain for a configuration that no target
    compares with and that drains slowly (Celery with django-celery-results: 200 runs/s,
    half a minute a drain at 5,000).
    """

    system: str
    label: str
    conn_max_age: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    jobs_at_most: int | None = None

    def jobs(self, sizes: Sizes) -> int:
        return capped(sizes.jobs, self.jobs_at_most)


THROUGHPUT = (
    Throughput("weft", "django-weft runjobs --no-schedules"),
    Throughput("weft_live", "django-weft runjobs, channels-redis configured"),
    Throughput("tasks_db", "django-tasks-db db_worker, CONN_MAX_AGE 600", PERSISTENT),
    Throughput("procrastinate", "procrastinate worker --concurrency 10", 0, {"concurrency": 10}),
    Throughput("celery", "celery worker -P prefork -c 4, no result backend"),
    Throughput(
        "celery_results",
        "celery worker -P prefork -c 4, django-celery-results",
        jobs_at_most=2_000,
    ),
)
#: The systems that keep their queue in the database, as django-weft does: the
#: "best durable" anchor is the fastest of these.
DURABLE = ("tasks_db", "procrastinate")


@dataclass(frozen=True)
class Latency:
    """A system's idle worker, and how far apart samples are (seconds, min and max).

    Where the worker polls (django-tasks-db, every second) the spacing spans its
    interval, so that samples land at every point of it; where NOTIFY wakes the
    worker, the spacing only keeps samples apart. ``samples_at_most`` caps the
    samples of a repeat: a polling worker's latency is spread evenly over its interval,
    which 30 samples show, and each of its samples takes a second.
    """

    system: str
    label: str
    conn_max_age: int
    spacing: tuple[float, float]
    samples_at_most: int | None = None

    def samples(self, sizes: Sizes) -> int:
        return capped(sizes.latency_samples, self.samples_at_most)


LATENCY = (
    Latency("weft", "django-weft runjobs", 0, (0.02, 0.2)),
    Latency(
        "tasks_db", "django-tasks-db db_worker, CONN_MAX_AGE 600", PERSISTENT, (0.02, 1.02), 30
    ),
    Latency("procrastinate", "procrastinate worker", 0, (0.02, 0.2)),
    Latency("celery", "celery worker -P prefork -c 4", 0, (0.02, 0.2)),
)


def workers_label(workers: int) -> str:
    return f"{workers} worker{'s' * (workers > 1)}"


SYSTEM_NAMES = {
    "weft": "django-weft",
    "weft_live": "django-weft, channels-redis",
    "tasks_db": "django-tasks-db",
    "procrastinate": "procrastinate",
    "celery": "Celery",
    "celery_results": "Celery, django-celery-results",
    "celery_beat": "django-celery-beat",
}


@dataclass(frozen=True)
class Sizes:
    """How big each measurement is (``--quick`` makes them small)."""

    jobs: int
    latency_samples: int
    due_schedules: int
    due_workers: int
    weft_tick_sizes: tuple[int, ...]
    beat_tick_sizes: tuple[int, ...]
    ticks: int
    ceiling_seconds: float
    #: ``start()`` calls, and ``start_many()`` batches of ``start_batch`` runs.
    start_singles: int
    start_batch: int
    start_batches: int
    #: Guest sockets of the fan-out, and its samples.
    fanout_sockets: int
    fanout_samples: int


FULL = Sizes(
    5_000,
    100,
    10_000,
    4,
    (10, 10_000, 100_000),
    (10, 10_000),
    100,
    3.0,
    2_000,
    1_000,
    10,
    1_000,
    30,
)
QUICK = Sizes(
    1_000, 30, 2_000, 4, (10, 10_000, 100_000), (10, 10_000), 50, 2.0, 1_000, 1_000, 5, 1_000, 10
)
#: The smallest run, end to end in a couple of minutes (tests/test_bench.py).
TINY = Sizes(30, 3, 300, 2, (10, 100), (10, 100), 3, 0.2, 30, 20, 2, 20, 2)


@dataclass
class Results:
    """Everything measured, per repeat, in the order the repeats ran."""

    ceiling: list[float] = field(default_factory=list)
    #: (configuration label, workers) -> one result per repeat.
    throughput: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    #: system -> samples (seconds) per repeat.
    latency: dict[str, list[list[float]]] = field(default_factory=dict)
    fires: list[dict[str, Any]] = field(default_factory=list)
    weft_ticks: list[dict[str, dict[str, float]]] = field(default_factory=list)
    beat_ticks: list[dict[str, dict[str, float]]] = field(default_factory=list)
    #: system (weft, weft_live) -> start rates per repeat.
    start_rates: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    fanout: list[dict[str, Any]] = field(default_factory=list)


def run_repeat(
    repeat: int, sizes: Sizes, results: Results, logs: Path, say: Callable[[str], None]
) -> None:
    """Measure everything once, saying each figure as soon as it is known."""

    def child(
        system: str, measurement: str, label: str, options: dict[str, Any], conn_max_age: int = 0
    ) -> dict[str, Any]:
        return compare_children.run(
            system,
            measurement,
            {**options, "label": f"r{repeat}-{label}"},
            conn_max_age=conn_max_age,
            logs=logs,
        )

    ceiling = compare_server.commit_ceiling(sizes.ceiling_seconds)
    results.ceiling.append(ceiling)
    say(f"commit ceiling: {ceiling:,.0f} commits/s")
    for workers in WORKER_COUNTS:
        for index, config in enumerate(THROUGHPUT):
            result = child(
                config.system,
                "throughput",
                f"throughput-{workers}w-{index}-{config.system}",
                {"jobs": config.jobs(sizes), "workers": workers, **config.options},
                config.conn_max_age,
            )
            results.throughput.setdefault((config.label, workers), []).append(result)
            shares = " + ".join(f"{count:,}" for count in result["per_worker"])
            say(
                f"{config.label}, {workers_label(workers)}: "
                f"{result['runs_per_s']:,.0f} runs/s ({result['runs_per_s'] / ceiling:.1%} of the "
                f"ceiling), enqueue {result['enqueue_per_s']:,.0f} jobs/s, drain "
                f"{result['drain_s']:.1f} s, wall {result['wall_s']:.1f} s, jobs per worker "
                f"{shares or 'not recorded'}"
            )
    for latency in LATENCY:
        samples = child(
            latency.system,
            "latency",
            f"latency-{latency.system}",
            {
                "samples": latency.samples(sizes),
                "warmup": 5,
                "spacing_min": latency.spacing[0],
                "spacing_max": latency.spacing[1],
            },
            latency.conn_max_age,
        )["latency_s"]
        results.latency.setdefault(latency.system, []).append(samples)
        say(
            f"{latency.label}: start -> run begins median "
            f"{_setup.percentile(samples, 0.5) * 1e3:.1f} ms, "
            f"p99 {_setup.percentile(samples, 0.99) * 1e3:.1f} ms ({len(samples)} samples)"
        )
    for system in ("weft", "weft_live"):
        rates = child(
            system,
            "start_rates",
            f"start-rates-{system}",
            {
                "singles": sizes.start_singles,
                "batch": sizes.start_batch,
                "batches": sizes.start_batches,
            },
        )
        results.start_rates.setdefault(system, []).append(rates)
        say(
            f"{SYSTEM_NAMES[system]}: start() {rates['start_per_s']:,.0f} runs/s "
            f"({1e3 / rates['start_per_s']:.2f} ms each), start_many() of "
            f"{sizes.start_batch:,} {rates['start_many_per_s']:,.0f} runs/s"
        )
    fanout = child(
        "weft_live",
        "fanout",
        "fanout-weft-live",
        {"sockets": sizes.fanout_sockets, "samples": sizes.fanout_samples},
    )
    results.fanout.append(fanout)
    say(
        f"fan-out to {fanout['sockets']:,} guest sockets (uvicorn, channels-redis), connected "
        f"in {fanout['connect_s']:.1f} s: commit -> last socket median "
        f"{_setup.median(fanout['last_ms']):.1f} ms, p99 "
        f"{_setup.percentile(fanout['last_ms'], 0.99):.1f} ms; first socket median "
        f"{_setup.median(fanout['first_ms']):.1f} ms ({len(fanout['last_ms'])} samples)"
    )
    if repeat == 1:
        weft_once(sizes, results, child, say)


def weft_once(
    sizes: Sizes, results: Results, child: Callable[..., dict[str, Any]], say: Callable[[str], None]
) -> None:
    """The first repeat's own figures: django-weft's due fires, the idle ticks."""
    fires = child(
        "weft",
        "due_fires",
        "due-fires-weft",
        {"schedules": sizes.due_schedules, "workers": sizes.due_workers},
    )
    results.fires.append(fires)
    say(
        f"django-weft, {sizes.due_schedules:,} due one-offs, {sizes.due_workers} runjobs: "
        f"all executed in {fires['executed_s']:.1f} s, {fires['fires_per_s']:,.0f} fires/s"
    )
    for system, tick_sizes, conn_max_age, per_repeat in (
        ("weft", sizes.weft_tick_sizes, 0, results.weft_ticks),
        ("celery_beat", sizes.beat_tick_sizes, PERSISTENT, results.beat_ticks),
    ):
        medians = child(
            system,
            "idle_ticks",
            f"idle-ticks-{system}",
            {"sizes": tick_sizes, "ticks": sizes.ticks},
            conn_max_age,
        )
        per_repeat.append(medians)
        for name, per_size in medians.items():
            say(
                f"{SYSTEM_NAMES[system]} idle {name}, median: "
                + ", ".join(f"{ms * 1e3:.2f} ms at {int(size):,}" for size, ms in per_size.items())
            )

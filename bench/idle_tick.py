"""The cost of an idle tick, and how it grows with the number of schedules.

Loads 10, then 10,000, then 100,000 armed, enabled interval schedules that are not due
(``next_due`` spread over the coming year) and times, at each size, an idle
``Scheduler().tick(now)`` and an idle ``Worker.tick()`` (no run queued). The design
target is that an idle tick costs the same whatever the number of idle schedules:
median(100k) / median(10) < 1.5. ``Worker.tick()`` is one iteration of the worker
loop without its sleep (the loop keeps its database connection between steps).

    .venv/bin/python bench/idle_tick.py [--database sqlite|postgres] [--ticks 200]
"""

from __future__ import annotations

import random
import time
from datetime import timedelta

import _setup

SIZES = (10, 10_000, 100_000)


def main() -> None:
    options = _setup.setup(
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument("--ticks", type=int, default=200),
    )
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from django_weft.engine.schedules.scheduler import Scheduler
    from django_weft.engine.worker.loop import Worker
    from django_weft.live.changes import Changes
    from django_weft.models import Schedule

    rng = random.Random(1)
    year = 365 * 24 * 3600
    scheduler = Scheduler()
    worker = Worker(executor="django_weft.engine.worker.executors.InlineExecutor", concurrency=4)
    worker.start()

    results: dict[int, dict[str, list[float]]] = {}
    queries: dict[str, int] = {}
    loaded = 0
    print(f"{options.ticks} idle ticks per size (after 10 warm-up ticks); times in ms")
    print(f"{'schedules':>10} {'what':<17} {'median':>8} {'p95':>8} {'mean':>8} {'load s':>8}")
    for size in SIZES:
        begin = time.perf_counter()
        now = timezone.now()
        _setup.load_hourly_schedules(
            f"bench-{loaded}",
            [now + timedelta(hours=1, seconds=rng.uniform(0, year)) for _ in range(size - loaded)],
        )
        loaded = size
        _setup.analyze()
        load_seconds = time.perf_counter() - begin
        assert Schedule.objects.count() == size

        results[size] = {
            "Scheduler.tick": _setup.time_idle_ticks(
                lambda: scheduler.tick(timezone.now(), Changes()), options.ticks
            ),
            "Worker.tick": _setup.time_idle_ticks(worker.tick, options.ticks),
        }
        for what, samples in results[size].items():
            print(
                f"{size:>10,} {what:<17} {_setup.median(samples) * 1e3:>8.3f} "
                f"{_setup.percentile(samples, 0.95) * 1e3:>8.3f} "
                f"{sum(samples) / len(samples) * 1e3:>8.3f} {load_seconds:>8.1f}"
            )
        with CaptureQueriesContext(connection) as captured:
            scheduler.tick(timezone.now(), Changes())
        queries["Scheduler.tick"] = len(captured)
        with CaptureQueriesContext(connection) as captured:
            worker.tick()
        queries["Worker.tick"] = len(captured)
    worker.close()

    print()
    print(
        "queries per idle tick (outside a heartbeat): "
        + ", ".join(f"{what} {count}" for what, count in queries.items())
    )
    smallest, largest = SIZES[0], SIZES[-1]
    for what in ("Scheduler.tick", "Worker.tick"):
        ratio = _setup.median(results[largest][what]) / _setup.median(results[smallest][what])
        verdict = "meets" if ratio < 1.5 else "MISSES"
        print(
            f"{what}: median {largest:,} / median {smallest:,} = {ratio:.2f} "
            f"({verdict} the < 1.5 target)"
        )


if __name__ == "__main__":
    main()

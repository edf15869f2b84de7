"""What waiting runs cost an idle worker: its idle tick with none, and with 10,000 runs
asleep and 10,000 more waiting for a signal.

A waiting run holds no worker (docs/flows.md); the claim never reads it, and the loop
reads only the earliest ``wake_at`` (the partial index ``weft_run_wake_at``, the one the
next retry shares), so the target is an idle tick that costs the same with 20,000
waiting runs as with none: median(20,000) / median(0) < 1.5. Times an idle
``Worker.tick()`` (one iteration of the loop without its sleep; no run queued) and the
look that reads the next wake, at each size.

    .venv/bin/python bench/waiting_idle.py [--database sqlite|postgres] [--ticks 200]
"""

from __future__ import annotations

import random
import time
from datetime import timedelta

import _setup

#: (asleep, waiting for a signal) at each step.
SIZES = ((0, 0), (10_000, 0), (10_000, 10_000))
BATCH = 2_000


def main() -> None:
    options = _setup.setup(
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument("--ticks", type=int, default=200),
    )
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from django_weft.engine.worker.loop import Worker
    from django_weft.live.changes import Changes
    from django_weft.models import Run, RunStatus

    rng = random.Random(1)
    year = 365 * 24 * 3600
    worker = Worker(executor="django_weft.engine.worker.executors.InlineExecutor", concurrency=4)
    worker.start()

    def add(asleep: int, signalled: int) -> None:
        now = timezone.now()
        rows = [
            Run(
                job="bench.noop",
                status=RunStatus.WAITING,
                created_at=now,
                started_at=now,
                attempt=1,
                wake_at=now + timedelta(hours=1, seconds=rng.uniform(0, year)),
            )
            for _ in range(asleep)
        ] + [
            Run(
                job="bench.noop",
                status=RunStatus.WAITING,
                created_at=now,
                started_at=now,
                attempt=1,
                awaiting="approval",
            )
            for _ in range(signalled)
        ]
        Run.objects.bulk_create(rows, batch_size=BATCH)

    medians: dict[tuple[int, int], float] = {}
    print(f"{options.ticks} idle ticks per size (after 10 warm-up ticks); times in ms")
    print(f"{'asleep':>8} {'on a signal':>12} {'median':>8} {'p95':>8} {'mean':>8} {'queries':>8}")
    loaded = (0, 0)
    for size in SIZES:
        add(size[0] - loaded[0], size[1] - loaded[1])
        loaded = size
        _setup.analyze()
        assert Run.objects.filter(status=RunStatus.WAITING).count() == sum(size)
        samples = _setup.time_idle_ticks(worker.tick, options.ticks)
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            worker.intake.look(timezone.now(), Changes(), everywhere=True)
            look = time.perf_counter() - started
        medians[size] = _setup.median(samples)
        print(
            f"{size[0]:>8,} {size[1]:>12,} {medians[size] * 1e3:>8.3f} "
            f"{_setup.percentile(samples, 0.95) * 1e3:>8.3f} "
            f"{sum(samples) / len(samples) * 1e3:>8.3f} {len(captured):>8}"
            f"   (a full look: {look * 1e3:.3f} ms)"
        )
    worker.close()
    print()
    ratio = medians[SIZES[-1]] / medians[SIZES[0]]
    verdict = "meets" if ratio < 1.5 else "MISSES"
    print(
        f"Worker.tick: median with {sum(SIZES[-1]):,} waiting / median with none = "
        f"{ratio:.2f} ({verdict} the < 1.5 target)"
    )


if __name__ == "__main__":
    main()

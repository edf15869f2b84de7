"""How fast the scheduler fires: runs started per second from 1,000 due schedules.

Loads 1,000 armed interval schedules (job ``bench.noop``, every hour) whose ``next_due``
passed within the grace, then times ``Scheduler().tick(now)`` repeated until a tick
finds nothing due (each tick fires one batch of up to 100 rows in one transaction).
Fires/s = runs created / seconds. Repeated ``--repeat`` times on a fresh load.

    .venv/bin/python bench/fire_rate.py [--database sqlite|postgres] [--repeat 5]
"""

from __future__ import annotations

import random
import time
from datetime import timedelta

import _setup

DUE_ROWS = 1_000


def main() -> None:
    options = _setup.setup(
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument("--repeat", type=int, default=5),
    )
    from django.utils import timezone

    from django_weft.conf import weft_settings
    from django_weft.engine.schedules.scheduler import Scheduler
    from django_weft.live.changes import Changes
    from django_weft.models import Run, Schedule

    rng = random.Random(1)
    grace = weft_settings.GRACE.total_seconds()
    scheduler = Scheduler()
    print(f"{DUE_ROWS:,} due schedules, Scheduler(batch_size={scheduler.batch_size}).tick(now)")
    print(f"{'repeat':>6} {'runs':>6} {'ticks':>6} {'seconds':>8} {'fires/s':>8}")
    rates = []
    for repeat in range(1, options.repeat + 1):
        Run.objects.all().delete()
        Schedule.objects.all().delete()
        now = timezone.now()
        # Due in the past, within the grace: each row fires its one slot.
        _setup.load_hourly_schedules(
            "due",
            [now - timedelta(seconds=rng.uniform(1, grace * 0.9)) for _ in range(DUE_ROWS)],
        )
        _setup.analyze()
        assert Schedule.objects.due(now).count() == DUE_ROWS

        ticks = 0
        begin = time.perf_counter()
        while True:
            ticks += 1
            if not scheduler.tick(now, Changes()):
                break
        seconds = time.perf_counter() - begin

        runs = Run.objects.count()
        assert runs == DUE_ROWS, f"{runs} runs for {DUE_ROWS} due rows"
        assert not Schedule.objects.due(now).exists()
        rates.append(runs / seconds)
        print(f"{repeat:>6} {runs:>6} {ticks:>6} {seconds:>8.3f} {runs / seconds:>8.0f}")
    print()
    print(
        f"fires/s: median {_setup.median(rates):.0f}, best {max(rates):.0f}, "
        f"worst {min(rates):.0f} over {len(rates)} repeats"
    )


if __name__ == "__main__":
    main()

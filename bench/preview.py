"""How long the 7-day preview takes over 10, 1,000 and 10,000 daily cron schedules.

Loads enabled daily cron schedules (job ``bench.noop``, ``M H * * *`` with a random
minute and hour, each in one of eight zones, two of them a 30 or 45 minutes off the
hour), then times ``manage.py runjobs --plan 7d`` (its output written to a buffer) and,
apart, ``preview()`` alone (reading the rows included), each the median of ``--repeat``
runs, in seconds on the clock and in CPU seconds of the process (which a busy machine
does not stretch). Then the cost of one ``CronPlan.next_fire`` call for a few
expressions, each call starting where the one before it stopped, and of ``CronPlan()``
plus one ``next_fire`` (what the scheduler does per fire).

    .venv/bin/python bench/preview.py [--database sqlite|postgres] [--repeat 3]
"""

from __future__ import annotations

import io
import random
import time
from datetime import UTC, datetime, timedelta

import _setup

SIZES = (10, 1_000, 10_000)
#: A week without a daylight-saving change in any of ZONES, so each row fires 7 times.
SINCE = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
ZONES = (
    "UTC",
    "America/Toronto",
    "America/Los_Angeles",
    "Europe/Berlin",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Asia/Tokyo",
    "Australia/Sydney",
)
#: (expression, zone) for the per-call cost of next_fire.
NEXT_FIRE_CASES = (
    ("0 7 * * *", "America/Toronto"),
    ("30 2 * * *", "Europe/Berlin"),
    ("0 9 * * mon-fri", "Europe/Berlin"),
    ("*/15 * * * *", "America/Toronto"),
    ("* * * * *", "UTC"),
    ("0 0 L * *", "Asia/Tokyo"),
    ("0 12 29 2 *", "UTC"),
    ("0 0 */7 * 1", "Pacific/Apia"),
)
NEXT_FIRE_CALLS = 500


def main() -> None:
    options = _setup.setup(
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument("--repeat", type=int, default=3),
    )
    from django.core.management import call_command

    from django_weft.engine.schedules.previews import enabled_schedules
    from django_weft.models import Schedule
    from django_weft.timing.cron import CronPlan
    from django_weft.timing.preview import preview

    rng = random.Random(1)
    period = timedelta(days=7)
    print(f"daily cron schedules, preview of 7 days from {SINCE:%Y-%m-%d %H:%M} UTC")
    print(f"median of {options.repeat} runs, seconds; cpu: this process's CPU time")
    print(
        f"{'schedules':>10} {'fires':>7} {'--plan 7d':>10} {'cpu':>6} {'preview()':>10} {'cpu':>6}"
    )
    loaded = 0
    for size in SIZES:
        Schedule.objects.bulk_create(
            [
                Schedule(
                    name=f"daily-{index:06d}",
                    job="bench.noop",
                    cron=f"{rng.randrange(60)} {rng.randrange(24)} * * *",
                    timezone=rng.choice(ZONES),
                )
                for index in range(loaded, size)
            ],
            batch_size=1000,
        )
        loaded = size
        _setup.analyze()
        command_times, command_cpu, preview_times, preview_cpu = [], [], [], []
        for _ in range(options.repeat):
            out = io.StringIO()
            begin, begin_cpu = time.perf_counter(), time.process_time()
            call_command("runjobs", "--plan", "7d", "--since", SINCE.isoformat(), stdout=out)
            command_times.append(time.perf_counter() - begin)
            command_cpu.append(time.process_time() - begin_cpu)
            fires = len(out.getvalue().splitlines()) - 1
            assert fires == 7 * size, f"{fires} fires listed for {size} daily schedules"
            begin, begin_cpu = time.perf_counter(), time.process_time()
            lines = preview(SINCE, period, enabled_schedules())
            preview_times.append(time.perf_counter() - begin)
            preview_cpu.append(time.process_time() - begin_cpu)
            assert len(lines) == 7 * size, f"{len(lines)} preview lines for {size} schedules"
        print(
            f"{size:>10,} {7 * size:>7,} {_setup.median(command_times):>10.3f} "
            f"{_setup.median(command_cpu):>6.3f} {_setup.median(preview_times):>10.3f} "
            f"{_setup.median(preview_cpu):>6.3f}"
        )

    print()
    print(f"CronPlan.next_fire, {NEXT_FIRE_CALLS:,} calls in a row; microseconds per call")
    print(f"{'expression':<16} {'zone':<18} {'next_fire':>10} {'new plan + next_fire':>21}")
    for expression, zone in NEXT_FIRE_CASES:
        plan = CronPlan(expression, zone)
        after = SINCE
        begin = time.perf_counter()
        for _ in range(NEXT_FIRE_CALLS):
            after = plan.next_fire(after).due
        chained = (time.perf_counter() - begin) / NEXT_FIRE_CALLS
        after = SINCE
        begin = time.perf_counter()
        for _ in range(NEXT_FIRE_CALLS):
            after = CronPlan(expression, zone).next_fire(after).due
        fresh = (time.perf_counter() - begin) / NEXT_FIRE_CALLS
        print(f"{expression:<16} {zone:<18} {chained * 1e6:>10.1f} {fresh * 1e6:>21.1f}")


if __name__ == "__main__":
    main()

"""A group against the same number of plain runs: how fast each drains, and how soon
the group's callback begins after its last member finished.

Starts ``--runs`` (10,000) runs of ``bench.noop``, first as plain runs (``start_many``,
batches of 1,000), then as the members of one group (``start_group``, in batches on an
open group, then sealed) whose callback is ``bench.gathered``; each time, drains them
with ``--workers`` (2) processes of ``bench/manage.py runjobs --once --no-schedules
--concurrency 4``. Runs/s is counted from the first claim to the last member's finish.
A member's finish counts it under the group's row lock (docs/flows.md), so the target is
a group that drains at least 80 % as fast as plain runs, and a callback that begins (is
claimed) within 50 ms of the last member's finish, median of the repeats.

    .venv/bin/python bench/group_drain.py [--database sqlite|postgres] [--runs 10000]
        [--repeat 3] [--workers 2]
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import _setup

BATCH = 1000


def add_arguments(parser) -> None:  # type: ignore[no-untyped-def]
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)


def main() -> None:
    options = _setup.setup(__doc__.splitlines()[0], add_arguments)
    from django.db.models import Max, Min

    from django_weft.engine.flows.groups import Callback
    from django_weft.engine.runs.starting import StartRequest
    from django_weft.jobs.registry import registry
    from django_weft.models import Group, Run, RunStatus, WorkerProcess
    from django_weft.operations import add_to_group, seal_group, start_group, start_many

    noop, gathered = registry.get("bench.noop"), registry.get("bench.gathered")
    logs = Path(tempfile.mkdtemp(prefix="weft-bench-logs-"))
    command = _setup.manage_command("runjobs", "--once", "--no-schedules", "--concurrency", "4")
    print(
        f"{options.runs:,} runs of bench.noop, {options.workers} workers: {' '.join(command[1:])}"
    )
    print(f"{'what':<6} {'repeat':>6} {'runs/s':>8} {'drain s':>8} {'callback after ms':>18}")

    def drain(label: str) -> float:
        _setup.analyze()
        _setup.run_workers(command, options.workers, logs, label)
        members = Run.objects.exclude(job="bench.gathered")
        if members.filter(status=RunStatus.DONE).count() != options.runs:
            raise SystemExit(f"{label}: not every run is done")
        span = members.aggregate(first=Min("started_at"), last=Max("finished_at"))
        return float((span["last"] - span["first"]).total_seconds())

    rates: dict[str, list[float]] = {"plain": [], "group": []}
    lags: list[float] = []
    for repeat in range(1, options.repeat + 1):
        for what in ("plain", "group"):
            Run.objects.all().delete()
            Group.objects.all().delete()
            WorkerProcess.objects.all().delete()
            requests = [StartRequest(noop) for _ in range(options.runs)]
            if what == "plain":
                for begin in range(0, options.runs, BATCH):
                    start_many(noop, [None] * len(requests[begin : begin + BATCH]))
            else:
                group = start_group([], callback=Callback(gathered), sealed=False)
                for begin in range(0, options.runs, BATCH):
                    add_to_group(group, requests[begin : begin + BATCH])
                seal_group(group)
            seconds = drain(f"{what}-{repeat}")
            rates[what].append(options.runs / seconds)
            lag = ""
            if what == "group":
                callback = Run.objects.get(job="bench.gathered")
                last = Run.objects.exclude(pk=callback.pk).aggregate(last=Max("finished_at"))
                if callback.status != RunStatus.DONE or callback.result != options.runs:
                    raise SystemExit(f"the callback ended {callback.status}: {callback.result}")
                lags.append((callback.started_at - last["last"]).total_seconds() * 1000)
                lag = f"{lags[-1]:.1f}"
            print(f"{what:<6} {repeat:>6} {options.runs / seconds:>8.0f} {seconds:>8.2f} {lag:>18}")
    shutil.rmtree(logs, ignore_errors=True)
    print()
    plain, grouped = _setup.median(rates["plain"]), _setup.median(rates["group"])
    share = grouped / plain
    print(
        f"group / plain: {grouped:.0f} / {plain:.0f} runs/s = {share:.2f} "
        f"({'meets' if share >= 0.8 else 'MISSES'} the >= 0.80 target)"
    )
    median_lag = _setup.median(lags)
    print(
        f"callback begins {median_lag:.1f} ms after the last member's finish, median "
        f"({'meets' if median_lag <= 50 else 'MISSES'} the <= 50 ms target)"
    )


if __name__ == "__main__":
    main()

"""No-op runs per second, end to end: started, claimed, executed, finished.

Starts ``--runs`` (1,000) runs of ``bench.noop`` with ``django_weft.operations.start`` (one
transaction each; starts/s is printed too), then drains them with 1 and with 2 worker
processes, each ``bench/manage.py runjobs --once --no-schedules --concurrency 4``
(the ThreadExecutor, 4 threads). Runs/s is counted from the first claim to the last
finish (min ``Run.started_at`` to max ``Run.finished_at``); the wall time around the
subprocesses, which adds interpreter and Django start-up, is printed beside it.

    .venv/bin/python bench/run_throughput.py [--database sqlite|postgres] [--runs 1000]
        [--repeat 2] [--concurrency 4]
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import _setup

WORKER_COUNTS = (1, 2)


def add_arguments(parser) -> None:  # type: ignore[no-untyped-def]
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)


def main() -> None:
    options = _setup.setup(__doc__.splitlines()[0], add_arguments)
    from django_weft.jobs.registry import registry
    from django_weft.models import Run, WorkerProcess
    from django_weft.operations import start

    noop = registry.get("bench.noop")
    logs = Path(tempfile.mkdtemp(prefix="weft-bench-logs-"))
    command = _setup.manage_command(
        "runjobs", "--once", "--no-schedules", "--concurrency", str(options.concurrency)
    )
    print(f"{options.runs:,} runs of bench.noop per measurement; workers: {' '.join(command[1:])}")
    print(
        f"{'workers':>7} {'repeat':>6} {'starts/s':>9} {'runs/s':>8} {'drain s':>8} "
        f"{'wall s':>7} {'wall runs/s':>11}  runs per worker"
    )
    rates: dict[int, list[float]] = {count: [] for count in WORKER_COUNTS}
    for workers in WORKER_COUNTS:
        for repeat in range(1, options.repeat + 1):
            Run.objects.all().delete()
            WorkerProcess.objects.all().delete()
            begin = time.perf_counter()
            for _ in range(options.runs):
                start(noop)
            starts_per_second = options.runs / (time.perf_counter() - begin)
            _setup.analyze()

            wall = _setup.run_workers(command, workers, logs, f"worker-{workers}-{repeat}")
            drain, per_worker = _setup.drained_span(options.runs)
            rates[workers].append(options.runs / drain)
            print(
                f"{workers:>7} {repeat:>6} {starts_per_second:>9.0f} {options.runs / drain:>8.0f} "
                f"{drain:>8.2f} {wall:>7.2f} {options.runs / wall:>11.0f}  "
                f"{' + '.join(str(count) for count in per_worker)}"
            )
    shutil.rmtree(logs, ignore_errors=True)
    print()
    for workers, values in rates.items():
        print(
            f"{workers} worker process(es) x {options.concurrency} threads: "
            f"median {_setup.median(values):.0f} runs/s (first claim to last finish)"
        )


if __name__ == "__main__":
    main()

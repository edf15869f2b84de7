"""django.tasks tasks beside equivalent job runs: enqueued, then drained by runjobs.

Each measurement enqueues ``--runs`` (10,000; 1,000 with ``--quick``) no-op runs one call
(and one transaction) at a time, ``bench.tasks.noop_task.enqueue()`` for tasks (the
``WeftBackend``) and ``django_weft.operations.start(bench.noop)`` for jobs, then
``ANALYZE``, then drains them with ``--workers`` (1) processes of ``bench/manage.py
runjobs --once --no-schedules --concurrency 4``. Tasks and jobs take turns (jobs first
in odd repeats, tasks first in even ones), so that a change in the machine's load falls
on both. Per measurement it prints enqueues/s, runs/s (first claim to last finish), the
wall time around the workers (their start-up included) and the total, enqueue plus
wall, and the CPU seconds of the same (this process's while it enqueues, plus the
workers'), which a busy machine sways less than the clock; then the medians and
the ratios tasks / jobs of the enqueue time, the drain, the total and the CPU total.
Issue 19's target: the tasks' total at most 1.10 times the jobs'.

    .venv/bin/python bench/task_throughput.py --database postgres [--quick] [--runs 10000]
        [--repeat 3] [--workers 1] [--concurrency 4]
"""

from __future__ import annotations

import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import _setup

KINDS = ("jobs", "tasks")
TARGET = 1.10


def add_arguments(parser) -> None:  # type: ignore[no-untyped-def]
    parser.add_argument("--quick", action="store_true", help="1,000 runs, 1 repeat")
    parser.add_argument("--runs", type=int, default=None, help="default 10,000")
    parser.add_argument("--repeat", type=int, default=None, help="default 3")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=4)


def main() -> None:
    options = _setup.setup(__doc__.splitlines()[0], add_arguments)
    runs = options.runs or (1_000 if options.quick else 10_000)
    repeats = options.repeat or (1 if options.quick else 3)
    from bench.tasks import noop_task
    from django_weft.jobs.registry import registry
    from django_weft.models import Run, WorkerProcess
    from django_weft.operations import start

    noop = registry.get("bench.noop")
    enqueue: dict[str, Callable[[], object]] = {
        "jobs": lambda: start(noop),
        "tasks": noop_task.enqueue,
    }
    logs = Path(tempfile.mkdtemp(prefix="weft-bench-logs-"))
    command = _setup.manage_command(
        "runjobs", "--once", "--no-schedules", "--concurrency", str(options.concurrency)
    )
    print(
        f"{runs:,} no-op runs per measurement, {options.workers} worker process(es): "
        f"{' '.join(command[1:])}"
    )
    print(
        f"{'kind':>5} {'repeat':>6} {'enqueue/s':>9} {'enqueue s':>9} {'runs/s':>7} "
        f"{'drain s':>7} {'wall s':>6} {'total s':>7} {'cpu s':>6} = enqueue + worker"
    )
    figures: dict[str, dict[str, list[float]]] = {
        kind: {
            name: [] for name in ("enqueue", "drain", "total", "cpu", "enqueue cpu", "worker cpu")
        }
        for kind in KINDS
    }
    for repeat in range(1, repeats + 1):
        for kind in KINDS if repeat % 2 else reversed(KINDS):
            Run.objects.all().delete()
            WorkerProcess.objects.all().delete()
            begin, begin_cpu = time.perf_counter(), time.process_time()
            for _ in range(runs):
                enqueue[kind]()
            enqueued, enqueued_cpu = time.perf_counter() - begin, time.process_time() - begin_cpu
            _setup.analyze()
            workers_cpu = _children_cpu()
            wall = _setup.run_workers(command, options.workers, logs, f"{kind}-{repeat}")
            workers_cpu = _children_cpu() - workers_cpu
            drain, _per_worker = _setup.drained_span(runs)
            cpu = enqueued_cpu + workers_cpu
            figures[kind]["enqueue cpu"].append(enqueued_cpu)
            figures[kind]["worker cpu"].append(workers_cpu)
            figures[kind]["enqueue"].append(enqueued)
            figures[kind]["drain"].append(drain)
            figures[kind]["total"].append(enqueued + wall)
            figures[kind]["cpu"].append(cpu)
            print(
                f"{kind:>5} {repeat:>6} {runs / enqueued:>9.0f} {enqueued:>9.2f} "
                f"{runs / drain:>7.0f} {drain:>7.2f} {wall:>6.2f} {enqueued + wall:>7.2f} "
                f"{cpu:>6.2f} = {enqueued_cpu:.2f} + {workers_cpu:.2f}"
            )
    shutil.rmtree(logs, ignore_errors=True)
    print()
    medians = {
        kind: {name: _setup.median(values) for name, values in figures[kind].items()}
        for kind in KINDS
    }
    for kind in KINDS:
        print(
            f"{kind:>5} medians: enqueue {medians[kind]['enqueue']:.2f} s "
            f"({runs / medians[kind]['enqueue']:.0f}/s), drain {medians[kind]['drain']:.2f} s "
            f"({runs / medians[kind]['drain']:.0f} runs/s), total {medians[kind]['total']:.2f} s, "
            f"CPU {medians[kind]['cpu']:.2f} s (enqueue {medians[kind]['enqueue cpu']:.2f}, "
            f"worker {medians[kind]['worker cpu']:.2f})"
        )
    ratios = {
        name: medians["tasks"][name] / medians["jobs"][name]
        for name in ("enqueue", "drain", "cpu", "enqueue cpu", "worker cpu")
    }
    total = medians["tasks"]["total"] / medians["jobs"]["total"]
    verdict = "met" if total <= TARGET else "NOT met"
    print(
        f"ratio tasks/jobs: enqueue {ratios['enqueue']:.3f}, drain {ratios['drain']:.3f}, "
        f"total {total:.3f} (target at most {TARGET:.2f}: {verdict}), CPU {ratios['cpu']:.3f} "
        f"(enqueue {ratios['enqueue cpu']:.3f}, worker {ratios['worker cpu']:.3f})"
    )


def _children_cpu() -> float:
    """User and system CPU seconds of this process's children that have exited."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()

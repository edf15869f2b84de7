"""How soon a workflow's step begins once its dependency finished, next to how soon a
plain run begins once it was started, in one run.

One ``runjobs`` (``--concurrency 4``) waits for work; the benchmark starts ``--count``
(200) workflows of two no-op steps (``bench.pair``: ``step2`` after ``step1``) and as
many plain runs, one of each every ``--pause`` (50 ms), then waits for all to finish.
From the stored moments: a plain run's start -> run (``started_at - created_at``) and a
step's dependency -> step (``step2.started_at - step1.finished_at``: the finish that
queues it, the worker's wake and its claim), median and p99.

    .venv/bin/python bench/step_latency.py [--database sqlite|postgres] [--count 200]
        [--pause 0.05]
"""

from __future__ import annotations

import signal
import subprocess
import tempfile
import time
from pathlib import Path

import _setup


def add_arguments(parser) -> None:  # type: ignore[no-untyped-def]
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--pause", type=float, default=0.05)


def main() -> None:
    options = _setup.setup(__doc__.splitlines()[0], add_arguments)
    from django_weft.jobs.registry import registry
    from django_weft.models import Run, RunStatus, WorkerProcess, Workflow
    from django_weft.operations import start, start_workflow

    noop = registry.get("bench.noop")
    command = _setup.manage_command("runjobs", "--no-schedules", "--concurrency", "4")
    log_path = Path(tempfile.mkdtemp(prefix="weft-bench-logs-")) / "runjobs.log"
    with log_path.open("w") as log:
        worker = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            while not WorkerProcess.objects.exists():
                if worker.poll() is not None:
                    raise SystemExit(f"runjobs exited; see {log_path}")
                time.sleep(0.1)
            for _ in range(options.count):
                start_workflow("bench.pair")
                start(noop)
                time.sleep(options.pause)
            expected = 3 * options.count
            while Run.objects.filter(status=RunStatus.DONE).count() < expected:
                if worker.poll() is not None:
                    raise SystemExit(f"runjobs exited; see {log_path}")
                time.sleep(0.2)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait()

    plain = [
        (run.started_at - run.created_at).total_seconds() * 1000
        for run in Run.objects.filter(workflow__isnull=True)
    ]
    dependency = []
    for workflow in Workflow.objects.prefetch_related("steps__run"):
        runs = {step.name: step.run for step in workflow.steps.all()}
        dependency.append((runs["step2"].started_at - runs["step1"].finished_at).total_seconds())
    dependency = [seconds * 1000 for seconds in dependency]
    print(f"{options.count} workflows of two no-op steps and {options.count} plain runs")
    print(f"{'what':<24} {'median ms':>10} {'p99 ms':>8}")
    for label, values in (("plain start -> run", plain), ("dependency -> step", dependency)):
        print(f"{label:<24} {_setup.median(values):>10.1f} {_setup.percentile(values, 0.99):>8.1f}")


if __name__ == "__main__":
    main()

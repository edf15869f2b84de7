"""Abort latency: from ``runs.abort(run)`` to the running job seeing ``RunAborted``.

One worker process (``bench/manage.py runjobs --no-schedules --concurrency 1``) runs
``bench.sleep`` runs that sleep through ``ctx.sleep(600)``. For each sample the
benchmark starts a run, waits until it is running, waits a random 50-300 ms more (so
the abort lands at a random point of the job's poll cycle), notes ``time.time()`` and
calls ``django_weft.operations.abort(run)``. The job writes ``time.time()`` to a file when
``RunAborted`` reaches it; the run is finished as aborted just after. The first sample,
taken once the worker has registered, warms up and is not counted.

- *seen*: abort call to ``RunAborted`` raised in the job (the abort latency);
- *aborted*: abort call to the benchmark seeing the run's status ``aborted`` committed;
- *claimed*: ``runs.start()`` call to the benchmark seeing the run ``running``: how fast
  an idle worker picks up a new run.

The benchmark watches the database every 2 ms, which adds up to that to *aborted* and
*claimed*.

On SQLite the job notices by polling (``WEFT_ABORT_POLL_INTERVAL``, 0.2 s); on
PostgreSQL a trigger NOTIFYs the worker, whose listener wakes the job at once.

    .venv/bin/python bench/abort_latency.py [--database sqlite|postgres] [--samples 50]
"""

from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import _setup


def wait_for(condition, timeout: float, interval: float = 0.002):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout}s waiting for {condition}")
        time.sleep(interval)


def main() -> None:
    options = _setup.setup(
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument("--samples", type=int, default=50),
    )
    from django_weft.conf import weft_settings
    from django_weft.jobs.registry import registry
    from django_weft.models import Run, RunStatus, WorkerProcess
    from django_weft.operations import abort, start

    sleep_job = registry.get("bench.sleep")
    rng = random.Random(1)
    records = Path(tempfile.mkdtemp(prefix="weft-bench-abort-"))
    log = (records / "worker.log").open("w")
    command = _setup.manage_command("runjobs", "--no-schedules", "--concurrency", "1")
    worker = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    print(f"worker: {' '.join(command[1:])} (log: {records / 'worker.log'})")
    print(
        f"WEFT_ABORT_POLL_INTERVAL {weft_settings.ABORT_POLL_INTERVAL}s, "
        f"WEFT_POLL_INTERVAL {weft_settings.POLL_INTERVAL}s; {options.samples} samples"
    )
    seen: list[float] = []
    aborted: list[float] = []
    claimed: list[float] = []
    try:
        # The worker is up once it has registered; one warm-up sample is not counted.
        wait_for(lambda: WorkerProcess.objects.filter(stopped_at__isnull=True).exists(), 60)
        for sample in range(options.samples + 1):
            started = time.time()
            run = start(sleep_job, {"seconds": 600, "record_dir": str(records)})
            running = wait_for(
                lambda run=run: Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).first(),
                timeout=30,
            )
            claim_latency = time.time() - started
            time.sleep(rng.uniform(0.05, 0.3))

            requested = time.time()
            assert abort(running)
            record = records / str(run.pk)
            wait_for(record.exists, timeout=30)
            wait_for(
                lambda run=run: Run.objects.filter(pk=run.pk, status=RunStatus.ABORTED).exists(),
                timeout=30,
            )
            aborted_latency = time.time() - requested
            if sample == 0:
                continue
            claimed.append(claim_latency)
            aborted.append(aborted_latency)
            seen.append(float(record.read_text()) - requested)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        log.close()
    shutil.rmtree(records, ignore_errors=True)

    print()
    print(f"{'ms':<9} {'p50':>8} {'p99':>8} {'max':>8} {'mean':>8}")
    for name, values in (("seen", seen), ("aborted", aborted), ("claimed", claimed)):
        print(
            f"{name:<9} {_setup.percentile(values, 0.5) * 1e3:>8.1f} "
            f"{_setup.percentile(values, 0.99) * 1e3:>8.1f} {max(values) * 1e3:>8.1f} "
            f"{sum(values) / len(values) * 1e3:>8.1f}"
        )


if __name__ == "__main__":
    main()

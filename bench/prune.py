"""Pruning a long history: a million finished runs deleted in bounded batches.

Loads ``--runs`` (1,000,000) finished runs that finished 40 days ago, one in ten with a
state document and one in ten with an earlier attempt, plus 1,000 recent runs and 100
schedules whose last runs are old (both must stay). Then deletes with
``prune_batch(before=now - 30 days, size=--batch)`` until a batch comes back empty, as
``prunejobs`` and a worker with ``WEFT_PRUNE_AFTER`` do. Prints rows deleted per second,
the slowest and the median batch, and the process's resident memory before, at most
during and after pruning, which shows the work is bounded by the batch, not by the
history. Then checks that the recent runs and the schedules' last runs are still there.

    .venv/bin/python bench/prune.py --database postgres [--runs 1000000] [--batch 1000]
"""

from __future__ import annotations

import time
from pathlib import Path

import _setup


def add_arguments(parser) -> None:  # type: ignore[no-untyped-def]
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1000)


def rss_mib() -> float:
    """This process's resident memory now (Linux), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def load(count: int) -> None:
    """The history, written in bulk: loading it is not what is measured."""
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    from django_weft.models import Attempt, Document, Run, Schedule

    old = timezone.now() - timedelta(days=40)
    chunk = 100_000
    for start in range(0, count, chunk):
        size = min(chunk, count - start)
        runs = [
            Run(job="bench.noop", status="done", created_at=old, started_at=old, finished_at=old)
            for _ in range(size)
        ]
        # The state documents first (a run's id is known before it is saved), so each
        # run is inserted once with its state: no bulk_update, whose CASE per row made
        # loading a million rows take longer than pruning them.
        states = Document.objects.bulk_create(
            [Document(key=f"run:{run.pk}", schema="bench", data={}) for run in runs[::10]],
            batch_size=5000,
        )
        for run, state in zip(runs[::10], states, strict=True):
            run.state = state
        Run.objects.bulk_create(runs, batch_size=5000)
        Attempt.objects.bulk_create(
            [Attempt(run=run, number=1, status="failed", ended_at=old) for run in runs[5::10]],
            batch_size=5000,
        )
        print(f"  loaded {start + size:,} runs", flush=True)
    recent = [
        Run(job="bench.noop", status="done", created_at=timezone.now(), finished_at=timezone.now())
        for _ in range(1000)
    ]
    Run.objects.bulk_create(recent)
    kept = Run.objects.bulk_create(
        [Run(job="bench.noop", status="done", created_at=old, finished_at=old) for _ in range(100)]
    )
    Schedule.objects.bulk_create(
        [
            Schedule(name=f"kept {n}", job="bench.noop", every=timedelta(hours=1), last_run=run)
            for n, run in enumerate(kept)
        ]
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def main() -> None:
    options = _setup.setup(__doc__.splitlines()[0], add_arguments)
    from datetime import timedelta

    from django.utils import timezone

    from django_weft.engine.history.pruning import prune_batch
    from django_weft.models import Attempt, Document, Run

    print(f"loading {options.runs:,} finished runs (this is not timed)")
    load(options.runs)
    before_mib = rss_mib()
    highest_mib = before_mib
    cutoff = timezone.now() - timedelta(days=30)
    durations: list[float] = []
    deleted = 0
    begin = time.perf_counter()
    while True:
        started = time.perf_counter()
        count = prune_batch(before=cutoff, size=options.batch)
        if not count:
            break
        durations.append(time.perf_counter() - started)
        deleted += count
        highest_mib = max(highest_mib, rss_mib())
    total = time.perf_counter() - begin
    after_mib = rss_mib()
    print(
        f"deleted {deleted:,} runs in {len(durations):,} batches of {options.batch:,}: "
        f"{total:.1f} s, {deleted / total:,.0f} runs/s"
    )
    print(
        f"batch median {_setup.median(durations) * 1000:.1f} ms, "
        f"p99 {_setup.percentile(durations, 0.99) * 1000:.1f} ms, "
        f"slowest {max(durations) * 1000:.1f} ms"
    )
    print(
        f"resident memory: {before_mib:.0f} MiB before pruning, at most {highest_mib:.0f} MiB "
        f"while pruning, {after_mib:.0f} MiB after"
    )
    left = Run.objects.count()
    if left != 1100:
        raise SystemExit(f"{left} runs left; expected the 1,000 recent and 100 last runs")
    if Attempt.objects.exists() or Document.objects.filter(key__startswith="run:").exists():
        raise SystemExit("attempts or state documents of pruned runs are left")
    print("kept: the 1,000 recent runs and the 100 schedules' last runs")


if __name__ == "__main__":
    main()

"""django-weft in ``compare.py``: its jobs and its measurements.

Driven only through the public surface (``@job``, ``runs.start()``, ``manage.py
runjobs``, ``Schedule`` rows, ``Scheduler`` and ``Worker``), so that the comparison
keeps working while the package changes underneath. The workers get the default
settings: ``runjobs`` without ``--concurrency`` (``WEFT_CONCURRENCY`` threads).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import _setup
import compare_common
import compare_fanout
from django.db.models import Max, Min
from django.utils import timezone
from rest_framework import serializers

from bench.jobs import noop
from django_weft.engine.schedules.scheduler import Scheduler
from django_weft.engine.worker.loop import Worker
from django_weft.jobs.context import RunContext
from django_weft.jobs.registry import job
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus
from django_weft.operations import start, start_many

APP = "django_weft"


class StampArgs(serializers.Serializer[Any]):
    socket = serializers.CharField()
    token = serializers.IntegerField()


@job("bench.stamp", args=StampArgs)
def stamp(ctx: RunContext, socket: str, token: int) -> None:
    """Tells the benchmark when it began (see ``compare_common.send_stamp``)."""
    compare_common.send_stamp(socket, token)


def _drained() -> compare_common.Drained:
    span = Run.objects.aggregate(first=Min("started_at"), last=Max("finished_at"))
    return compare_common.Drained(
        done=Run.objects.filter(status=RunStatus.DONE).count(),
        first_start=span["first"],
        last_finish=span["last"],
        per_worker=list(Counter(Run.objects.values_list("worker_id", flat=True)).values()),
    )


def _runjobs(*arguments: str) -> list[str]:
    return _setup.manage_command("runjobs", *arguments, script="compare_manage.py")


def due_fires(options: dict[str, Any], logs: Path) -> dict[str, Any]:
    """One-off schedules, all due, fired and executed by ``options["workers"]`` runjobs.

    The rows are armed with ``at`` (and so ``next_due``) in the past hour, as rows
    saved in advance are once their moment has passed. The workers run until every
    fire is a finished run; then they are stopped. Every schedule must have made
    exactly one run, and every run must be done.
    """
    count = options["schedules"]
    compare_common.truncate_app(APP)
    now = timezone.now()
    rng = random.Random(1)
    _setup.load_one_off_schedules(
        "due", [now - timedelta(seconds=rng.uniform(1, 3600)) for _ in range(count)]
    )
    _setup.analyze()
    timeout = compare_common.drain_timeout(count)
    begin = time.perf_counter()
    with compare_common.Workers(_runjobs(), options["workers"], logs, options["label"]) as workers:
        while Run.objects.finished().count() < count:
            workers.check_running()
            if time.perf_counter() - begin > timeout:
                raise RuntimeError(f"{count} due fires not all finished after {timeout:.0f} s")
            time.sleep(0.2)
        wall = time.perf_counter() - begin
    runs, done = Run.objects.count(), Run.objects.filter(status=RunStatus.DONE).count()
    if (runs, done) != (count, count):
        raise RuntimeError(f"{runs} runs, {done} done, for {count} one-off schedules; see {logs}")
    span = Run.objects.aggregate(
        first=Min("created_at"), last_fire=Max("created_at"), last_finish=Max("finished_at")
    )
    # created_at is the moment the tick that fired the run began: the span misses the
    # last firing tick's own time, which is small against thousands of fires.
    firing = (span["last_fire"] - span["first"]).total_seconds()
    if firing <= 0:
        raise RuntimeError(f"all {count} schedules fired in one tick: too few to time")
    return {
        "executed_s": (span["last_finish"] - span["first"]).total_seconds(),
        "fires_per_s": count / firing,
        "wall_s": wall,
    }


def idle_ticks(options: dict[str, Any], logs: Path) -> dict[str, Any]:
    """Median idle ``Scheduler.tick`` and ``Worker.tick`` with each number of schedules.

    As ``idle_tick.py`` does: hourly schedules whose next fire is within the coming
    year, so none is due; ``Worker.tick`` on a registered worker with no run queued.
    """
    compare_common.truncate_app(APP)
    rng = random.Random(1)
    year = 365 * 24 * 3600
    scheduler = Scheduler()
    worker = Worker(executor="django_weft.engine.worker.executors.InlineExecutor")
    worker.start()
    medians: dict[str, dict[str, float]] = {"Scheduler.tick": {}, "Worker.tick": {}}
    loaded = 0
    try:
        for size in options["sizes"]:
            now = timezone.now()
            _setup.load_hourly_schedules(
                f"idle-{loaded}",
                [
                    now + timedelta(hours=1, seconds=rng.uniform(0, year))
                    for _ in range(size - loaded)
                ],
            )
            loaded = size
            _setup.analyze()
            ticks = {
                "Scheduler.tick": lambda: scheduler.tick(timezone.now(), Changes()),
                "Worker.tick": worker.tick,
            }
            for what, tick in ticks.items():
                samples = _setup.time_idle_ticks(tick, options["ticks"])
                medians[what][str(size)] = _setup.median(samples)
    finally:
        worker.close()
    return medians


def start_rates(options: dict[str, Any], logs: Path) -> dict[str, Any]:
    """Runs started per second: ``start()`` one at a time (a commit each), then
    ``start_many()`` in batches of ``options["batch"]`` (a commit per batch)."""
    compare_common.truncate_app(APP)
    single = compare_common.enqueue_rate(lambda: start(noop), options["singles"])
    compare_common.truncate_app(APP)
    batch, batches = options["batch"], options["batches"]
    begin = time.perf_counter()
    for _ in range(batches):
        start_many(noop, [{}] * batch)
    bulk = batch * batches / (time.perf_counter() - begin)
    if Run.objects.count() != batch * batches:
        raise RuntimeError(f"{Run.objects.count()} runs for {batch * batches} bulk starts")
    return {"start_per_s": single, "start_many_per_s": bulk}


MEASUREMENTS = {
    **compare_common.JobQueue(
        app_label=APP,
        enqueue_noop=lambda: start(noop),
        enqueue_stamp=lambda socket, token: start(stamp, {"socket": socket, "token": token}),
        drain_command=lambda options: _runjobs("--once", "--no-schedules"),
        idle_command=_runjobs("--no-schedules"),
        drained=_drained,
    ).measurements(),
    "due_fires": due_fires,
    "idle_ticks": idle_ticks,
    "start_rates": start_rates,
    "fanout": compare_fanout.fanout,
}

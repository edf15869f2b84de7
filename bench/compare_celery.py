"""Celery in ``compare.py``: a Redis broker, prefork workers, with or without results.

Two systems share this module: ``celery`` (no result backend, ``task_ignore_result``)
and ``celery_results`` (django-celery-results' ``django-db`` backend: a ``TaskResult``
row written per task, in this system's PostgreSQL database). The broker is Redis at
``compare_redis.URL`` with this run's key prefix on every key (kombu's
``global_keyprefix``) and a queue named with it; remote control, gossip, mingle and
heartbeats are off (nothing here uses them). Workers are real ``celery worker -P prefork
-c 4`` processes (``python -m celery -A compare_celery worker``).

Without results Celery records nothing of a task, so its workers count for the
benchmark: ``task_postrun`` (sent after the result, if any, is stored) increments a Redis
counter on a kept connection, and the one that reaches the expected count notes the
moment and pushes to a list the benchmark blocks on (no polling). ``worker_ready`` pushes
to another list, so that the benchmark enqueues only once every worker is up. Runs/s
is from the first enqueue to the last task done, the workers running all along.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import compare_common
import compare_redis
import django
from celery import Celery, signals
from django.apps import apps

if not apps.ready:  # a worker process: ``celery -A compare_celery`` imports this first
    os.environ["DJANGO_SETTINGS_MODULE"] = "compare_settings"
    django.setup()

RESULTS = os.environ["WEFT_COMPARE_SYSTEM"] == "celery_results"
if RESULTS:
    from django_celery_results.models import TaskResult
#: The expected number of tasks, set by the benchmark before it starts the workers.
EXPECTED = "WEFT_COMPARE_CELERY_TASKS"
DONE = f"{compare_redis.prefix('counts')}:done"
LAST = f"{compare_redis.prefix('counts')}:last"
FINISHED = f"{compare_redis.prefix('counts')}:finished"
READY = f"{compare_redis.prefix('counts')}:ready"
#: How long the workers get to come up.
READY_TIMEOUT = 120

app = Celery("bench")
app.conf.update(
    broker_url=compare_redis.URL,
    broker_transport_options={"global_keyprefix": f"{compare_redis.prefix('broker')}:"},
    broker_connection_retry_on_startup=True,
    task_default_queue=compare_redis.prefix("queue"),
    task_ignore_result=not RESULTS,
    result_backend="django-db" if RESULTS else None,
    worker_enable_remote_control=False,
    worker_hijack_root_logger=False,
)


@app.task(name="bench.noop")
def noop() -> None:
    """Does nothing: what is measured is the machinery around it."""


@app.task(name="bench.stamp")
def stamp(socket: str, token: int) -> None:
    """Tells the benchmark when it began (see ``compare_common.send_stamp``)."""
    compare_common.send_stamp(socket, token)


_counting: dict[str, Any] = {}


@signals.worker_ready.connect
def _ready(**kwargs: Any) -> None:
    with compare_redis.client() as connection:
        connection.lpush(READY, os.getpid())


@signals.task_postrun.connect
def _count(**kwargs: Any) -> None:
    """Count a finished task; the last expected one notes the moment (see above)."""
    if "connection" not in _counting:
        _counting["connection"] = compare_redis.client()
        _counting["expected"] = int(os.environ.get(EXPECTED, "0"))
    connection = _counting["connection"]
    if connection.incr(DONE) == _counting["expected"]:
        connection.set(LAST, repr(time.time()))
        connection.lpush(FINISHED, "1")


def _worker_command() -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "compare_celery",
        "worker",
        "-P",
        "prefork",
        "-c",
        "4",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-l",
        "warning",
    ]


def _start_workers(count: int, logs: Path, label: str, tasks: int) -> compare_common.Workers:
    """``count`` workers expecting ``tasks`` tasks, each up once the block is entered."""
    compare_redis.clean()
    if RESULTS:
        compare_common.truncate_app("django_celery_results")
    os.environ[EXPECTED] = str(tasks)
    os.environ["PYTHONPATH"] = str(Path(__file__).resolve().parent)
    return compare_common.Workers(_worker_command(), count, logs, label)


def _wait_ready(workers: compare_common.Workers, count: int) -> None:
    with compare_redis.client() as connection:
        for _ in range(count):
            workers.check_running()
            if connection.blpop([READY], timeout=READY_TIMEOUT) is None:
                workers.check_running()
                raise RuntimeError(f"celery workers not ready after {READY_TIMEOUT} s")


def throughput(options: dict[str, Any], logs: Path) -> dict[str, Any]:
    """Enqueue ``options["jobs"]`` no-op tasks one at a time to running workers; runs/s
    from the first enqueue to the last task done."""
    jobs, count = options["jobs"], options["workers"]
    with _start_workers(count, logs, options["label"], jobs) as workers:
        _wait_ready(workers, count)
        begin = time.time()
        enqueued_per_second = compare_common.enqueue_rate(noop.delay, jobs)
        with compare_redis.client() as connection:
            if connection.blpop([FINISHED], timeout=compare_common.drain_timeout(jobs)) is None:
                done = int(connection.get(DONE) or 0)
                raise RuntimeError(f"{done} of {jobs} celery tasks done; see {logs}")
            last = float(connection.get(LAST) or 0)
        wall = time.time() - begin
    if RESULTS:
        stored = TaskResult.objects.filter(status="SUCCESS").count()
        if stored != jobs:
            raise RuntimeError(f"{stored} of {jobs} task results stored; see {logs}")
    span = last - begin
    compare_redis.clean()
    return {
        "enqueue_per_s": enqueued_per_second,
        "runs_per_s": jobs / span,
        "drain_s": span,
        "wall_s": wall,
        "per_worker": [],
    }


def latency(options: dict[str, Any], logs: Path) -> dict[str, Any]:
    """Samples (seconds) from an enqueue to its task beginning, on one idle worker."""
    with (
        compare_common.stamp_receiver() as receiver,
        _start_workers(1, logs, options["label"], 0) as workers,
    ):
        _wait_ready(workers, 1)
        samples = compare_common.sample_latency(
            lambda socket, token: stamp.delay(socket, token),
            receiver,
            samples=options["samples"],
            warmup=options["warmup"],
            spacing=(options["spacing_min"], options["spacing_max"]),
            check=workers.check_running,
        )
    compare_redis.clean()
    return {"latency_s": samples}


MEASUREMENTS = {"throughput": throughput, "latency": latency}

"""What every system's measurements in ``compare.py`` share.

A measurement runs in a child process configured (``configure``) for one system; it
starts that system's workers as subprocesses of ``compare_manage.py``
(:class:`Workers`). The job queues (all but django-celery-beat) share their
throughput and latency measurements (:class:`JobQueue`): enqueues are timed one call
at a time, and the latency from an enqueue to the job's first line comes through
:class:`StampReceiver`: the job sends ``time.time()`` to a UNIX datagram socket, so
that waiting for it costs the benchmark no CPU (polling a file would take a core from
the worker it measures).
"""

from __future__ import annotations

import importlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

import _setup
import django
from django.apps import apps
from django.db import connection

#: The module holding each system's jobs and measurements, imported once Django is set up.
SYSTEM_MODULES = {
    "weft": "compare_weft",
    "weft_live": "compare_weft",
    "tasks_db": "compare_tasks_db",
    "procrastinate": "compare_procrastinate",
    "celery": "compare_celery",
    "celery_results": "compare_celery",
    "celery_beat": "compare_celery_beat",
}
#: How long a stopped worker gets to exit before it is killed.
STOP_GRACE = 15.0


def configure() -> ModuleType:
    """Set Django up for ``WEFT_COMPARE_SYSTEM`` and import that system's module."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "compare_settings"
    django.setup()
    return importlib.import_module(SYSTEM_MODULES[os.environ["WEFT_COMPARE_SYSTEM"]])


class Workers:
    """Worker subprocesses, each logging to a file; stopped (or killed) on leaving.

    ``with Workers(command, count, logs, name) as workers:`` starts ``count`` copies of
    ``command``, logging to ``logs/<name>-<n>.log``; leaving the block stops those
    still running with SIGTERM, then SIGKILL after :data:`STOP_GRACE`, so that no
    worker outlives its measurement.
    """

    def __init__(self, command: Sequence[str], count: int, logs: Path, name: str) -> None:
        self.command = list(command)
        self.logs = [logs / f"{name}-{index}.log" for index in range(count)]
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Workers:
        try:
            for path in self.logs:
                with path.open("ab") as log:
                    self.processes.append(
                        subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)
                    )
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def wait(self, timeout: float) -> None:
        """Wait for every worker to exit by itself; each must exit with 0."""
        deadline = time.monotonic() + timeout
        for process, log in zip(self.processes, self.logs, strict=True):
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise RuntimeError(
                    f"{' '.join(self.command[1:])} still running after {timeout:.0f} s; see {log}"
                ) from None
            if process.returncode != 0:
                raise RuntimeError(
                    f"{' '.join(self.command[1:])} exited with {process.returncode}; see {log}"
                )

    def check_running(self) -> None:
        """Fail at once if a worker that should be waiting has exited."""
        for process, log in zip(self.processes, self.logs, strict=True):
            if process.poll() is not None:
                raise RuntimeError(
                    f"{' '.join(self.command[1:])} exited with {process.returncode}; see {log}"
                )

    def stop(self) -> None:
        running = [process for process in self.processes if process.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE
        for process in running:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def enqueue_rate(enqueue: Callable[[], object], count: int) -> float:
    """Jobs per second for ``count`` calls of ``enqueue``, one job (one commit) each."""
    begin = time.perf_counter()
    for _ in range(count):
        enqueue()
    return count / (time.perf_counter() - begin)


def drain_timeout(jobs: int) -> float:
    """How long a drain may take before the benchmark gives up: 10 jobs/s and a minute."""
    return 60.0 + jobs / 10


def truncate_app(label: str) -> None:
    """Empty the app's tables, so that every measurement starts from the same state."""
    tables = [model._meta.db_table for model in apps.get_app_config(label).get_models()]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


class Drained(NamedTuple):
    """What a system recorded of a drain, from its own tables."""

    done: int
    first_start: datetime
    last_finish: datetime
    #: Jobs each worker process ran, where the system records it (else empty).
    per_worker: list[int]


#: A measurement: its options and the folder for logs, to a JSON-able result.
Measurement = Callable[[dict[str, Any], Path], dict[str, Any]]


@dataclass(frozen=True)
class JobQueue:
    """What the throughput and latency measurements need to know of a job system."""

    #: The app whose tables are emptied before each measurement.
    app_label: str
    #: Enqueue one no-op job, in a transaction (a commit) of its own.
    enqueue_noop: Callable[[], object]
    #: Enqueue one job that calls :func:`send_stamp` with these arguments.
    enqueue_stamp: Callable[[str, int], object]
    #: The worker command that drains the queue and exits, for these options.
    drain_command: Callable[[dict[str, Any]], list[str]]
    #: The worker command that waits for jobs until it is stopped.
    idle_command: list[str]
    #: What the system recorded of the last drain.
    drained: Callable[[], Drained]

    def measurements(self) -> dict[str, Measurement]:
        return {"throughput": self.throughput, "latency": self.latency}

    def throughput(self, options: dict[str, Any], logs: Path) -> dict[str, Any]:
        """Enqueue ``options["jobs"]`` no-op jobs one at a time, then drain them.

        ``options["workers"]`` worker processes drain the queue and exit by themselves.
        Runs/s counts from the first job starting to the last finishing, as the system
        recorded them; the wall time around the worker processes (their start-up
        included) is returned beside it.
        """
        jobs = options["jobs"]
        truncate_app(self.app_label)
        enqueued_per_second = enqueue_rate(self.enqueue_noop, jobs)
        _setup.analyze()
        begin = time.perf_counter()
        command = self.drain_command(options)
        with Workers(command, options["workers"], logs, options["label"]) as workers:
            workers.wait(drain_timeout(jobs))
        wall = time.perf_counter() - begin
        record = self.drained()
        if record.done != jobs:
            raise RuntimeError(f"{record.done} of {jobs} jobs finished successfully; see {logs}")
        span = (record.last_finish - record.first_start).total_seconds()
        return {
            "enqueue_per_s": enqueued_per_second,
            "runs_per_s": jobs / span,
            "drain_s": span,
            "wall_s": wall,
            "per_worker": sorted(record.per_worker, reverse=True),
        }

    def latency(self, options: dict[str, Any], logs: Path) -> dict[str, Any]:
        """Samples (seconds) from an enqueue to its job beginning, on one idle worker."""
        truncate_app(self.app_label)
        with (
            stamp_receiver() as receiver,
            Workers(self.idle_command, 1, logs, options["label"]) as workers,
        ):
            samples = sample_latency(
                self.enqueue_stamp,
                receiver,
                samples=options["samples"],
                warmup=options["warmup"],
                spacing=(options["spacing_min"], options["spacing_max"]),
                check=workers.check_running,
            )
        return {"latency_s": samples}


def send_stamp(path: str, token: int) -> None:
    """Tell the benchmark at ``path`` that the job ``token`` began, and when."""
    began = time.time()
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
        sender.sendto(f"{token} {began!r}".encode(), path)


class StampReceiver:
    """The socket the latency jobs send their start moment to (see :func:`send_stamp`)."""

    def __init__(self) -> None:
        self._directory = tempfile.mkdtemp(prefix="weft-compare-stamps-")
        self.path = str(Path(self._directory, "stamps.sock"))
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.bind(self.path)

    def close(self) -> None:
        self._socket.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    def wait(self, token: int, timeout: float) -> float:
        """The moment the job ``token`` began (``time.time()``); stale stamps are skipped."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RuntimeError(f"latency job {token} did not begin within {timeout:.0f} s")
            self._socket.settimeout(remaining)
            try:
                message = self._socket.recv(256).decode()
            except TimeoutError:
                continue
            received, began = message.split()
            if int(received) == token:
                return float(began)


@contextmanager
def stamp_receiver() -> Iterator[StampReceiver]:
    receiver = StampReceiver()
    try:
        yield receiver
    finally:
        receiver.close()


def sample_latency(
    enqueue: Callable[[str, int], object],
    receiver: StampReceiver,
    *,
    samples: int,
    warmup: int,
    spacing: tuple[float, float],
    check: Callable[[], None],
) -> list[float]:
    """Seconds from just before ``enqueue(path, token)`` to the job's first line.

    One job at a time, to one idle worker; the first ``warmup`` samples (the first one
    waits for the worker to come up) are not kept. After each sample the benchmark
    waits a random time within ``spacing`` seconds, so that samples do not fall in
    step with a worker's poll interval. ``check`` fails when the worker died.
    """
    rng = random.Random(1)
    kept = []
    for token in range(warmup + samples):
        check()
        begin = time.time()
        enqueue(receiver.path, token)
        began = receiver.wait(token, timeout=120.0 if token == 0 else 30.0)
        if token >= warmup:
            kept.append(began - begin)
        time.sleep(rng.uniform(*spacing))
    return kept

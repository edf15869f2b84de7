"""The worker: the loop ``manage.py runjobs`` runs, usable without argv.

A worker is a scheduler (fires due schedules into runs) and an executor (runs claimed
runs) around one loop of steps. ``tick()`` does one round of work and says whether it
did any, so tests call it directly; ``run()`` repeats it, sleeping through the clock
when there is nothing to do until the next due time, a NOTIFY, or the poll interval.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial

from django.db import connections

from django_weft.clocks import Clock, load_clock
from django_weft.conf import weft_settings
from django_weft.execution import execute
from django_weft.executors import Executor, load_executor
from django_weft.jobs import Job, registry
from django_weft.models import Run, RunStatus, Schedule, WorkerProcess
from django_weft.notify import Listener, can_listen
from django_weft.runs import claim, finish, finish_lost
from django_weft.scheduler import Scheduler

logger = logging.getLogger("django_weft.worker")


class ClockPaused(Exception):
    """Raised by a driven clock's ``sleep_until`` to hand control back to ``advance()``."""


class Worker:
    """One ``runjobs`` process's worth of scheduling and executing."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        executor: str | Executor | None = None,
        concurrency: int | None = None,
        queues: Iterable[str] | None = None,
        jobs: Iterable[str] | None = None,
        schedules: bool = True,
        shutdown_grace: float | None = None,
        poll_interval: float | None = None,
    ) -> None:
        self.clock = clock or load_clock()
        concurrency = concurrency or weft_settings.CONCURRENCY
        self.executor = (
            executor if isinstance(executor, Executor) else load_executor(executor, concurrency)
        )
        self.queues = list(queues) if queues is not None else None
        self.job_names = set(jobs) if jobs is not None else None
        self.schedules = schedules
        self.shutdown_grace = (
            weft_settings.SHUTDOWN_GRACE if shutdown_grace is None else shutdown_grace
        )
        self.poll_interval = poll_interval or weft_settings.POLL_INTERVAL
        self.scheduler = Scheduler()
        self.process: WorkerProcess | None = None
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._forced = threading.Event()
        self._aborts: dict[uuid.UUID, threading.Event] = {}
        self._listener: Listener | None = None
        self._next_beat: datetime | None = None
        #: Set when a forced stop left runs that ignored their abort behind.
        self.abandoned = False
        self.clock.attach(self)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> WorkerProcess:
        """Register this process and finish the runs of workers that died before it."""
        now = self.clock.now()
        self.process = WorkerProcess.objects.create(
            hostname=socket.gethostname(), pid=os.getpid(), started_at=now, last_beat=now
        )
        self._next_beat = now
        lost = finish_lost(now=now, silent_since=self._silence_limit(now))
        if can_listen():
            self._listener = Listener(self._on_notify)
            self._listener.start()
        enabled = Schedule.objects.filter(enabled=True).count()
        logger.info(
            "runjobs started as %s: %d enabled schedule(s), %d job(s), concurrency %d, clock %s%s",
            self.process,
            enabled,
            len(self.jobs()),
            self.executor.concurrency,
            type(self.clock).__name__,
            f"; finished {lost} lost run(s)" if lost else "",
        )
        return self.process

    def run(self, *, once: bool = False) -> None:
        """Work until stopped (or, with ``once``, until nothing is due or running)."""
        if self.process is None:
            self.start()
        self._log_next_fire()
        try:
            self._loop(once=once)
        finally:
            self.close()

    def run_until_paused(self) -> None:
        """Work until a driven clock pauses; used by ``DrivenClock.advance``."""
        if self.process is None:
            self.start()
        try:
            self._loop(once=False)
        except ClockPaused:
            return

    @property
    def is_stopping(self) -> bool:
        return self._stopping.is_set()

    def stop(self) -> None:
        """Stop claiming; running runs get the shutdown grace to finish."""
        if not self._stopping.is_set():
            logger.info(
                "stopping: no new runs; waiting up to %ss for running ones", self.shutdown_grace
            )
        self._stopping.set()
        self._wake.set()

    def force_stop(self) -> None:
        """Abort running runs now instead of waiting for the grace period."""
        self._forced.set()
        self.stop()

    def close(self) -> None:
        """Let running runs finish within the grace, abort the rest, and deregister."""
        ended = self.executor.wait_idle(0) or self._wait_or_abort()
        self.executor.shutdown(wait=ended)
        if self._listener is not None:
            self._listener.stop()
            self._listener.join(5)
        if self.process is not None:
            WorkerProcess.objects.filter(pk=self.process.pk).update(stopped_at=self.clock.now())
        logger.info("runjobs stopped")

    def _wait_or_abort(self) -> bool:
        """Wait out the grace, then abort; True once every run has ended.

        A second signal stops the waiting. Runs that still have not reached a
        ``sleep()``/``check()`` then are finished as aborted here, because the process
        is about to exit under them; ``abandoned`` tells the command to exit at once.
        """
        if self._wait_idle_beating(self.shutdown_grace):
            return True
        running = list(self._aborts)
        logger.warning("aborting %d run(s) still running at shutdown", len(running))
        now = self.clock.now()
        for run in Run.objects.filter(pk__in=running):
            run.record_abort_request(now)
        for event in list(self._aborts.values()):
            event.set()
        if self._wait_idle_beating(None):
            return True
        for run_id in list(self._aborts):
            finish(
                run_id,
                RunStatus.ABORTED,
                now=self.clock.now(),
                error_type="WorkerStopped",
                error_message="the worker stopped before the run reached a sleep() or check()",
                expected=[RunStatus.RUNNING],
            )
        self.abandoned = True
        return False

    def _wait_idle_beating(self, seconds: float | None) -> bool:
        """Wait for the runs to end, beating meanwhile: finishing runs are not lost."""
        waited = 0.0
        while seconds is None or waited < seconds:
            if self._forced.is_set():
                return self.executor.wait_idle(1.0)
            if self.executor.wait_idle(0.1):
                return True
            waited += 0.1
            self._beat(self.clock.now())
        return self.executor.wait_idle(0)

    # -- the loop -------------------------------------------------------------------------

    def _loop(self, *, once: bool) -> None:
        while not self._stopping.is_set():
            _drop_broken_connections()
            if self.tick():
                continue
            if self.clock.waits_for_runs and not self.executor.wait_idle(0):
                self.executor.wait_idle()
                continue
            if once and self.executor.wait_idle(0):
                return
            # Never sleep past a heartbeat: other workers count silence as death.
            longest = min(self.poll_interval, weft_settings.HEARTBEAT_INTERVAL)
            self.clock.sleep_until(self.next_wakeup(), self._wake, longest)

    def tick(self) -> bool:
        """One round: keep the heartbeat, fire due schedules, claim runs. True if it did work."""
        now = self.clock.now()
        self._beat(now)
        fired = self.schedules and not self._stopping.is_set() and self.scheduler.tick(now)
        claimed = self._claim(now)
        return bool(fired or claimed)

    def next_wakeup(self) -> datetime | None:
        return self.scheduler.next_due() if self.schedules else None

    def jobs(self) -> list[Job]:
        return [job for job in registry if self.job_names is None or job.name in self.job_names]

    def _beat(self, now: datetime) -> None:
        if self.process is None or (self._next_beat is not None and now < self._next_beat):
            return
        WorkerProcess.objects.filter(pk=self.process.pk).update(last_beat=now)
        self._next_beat = now + timedelta(seconds=weft_settings.HEARTBEAT_INTERVAL)
        lost = finish_lost(now=now, silent_since=self._silence_limit(now))
        if lost:
            logger.warning("finished %d run(s) of silent workers as lost", lost)

    @staticmethod
    def _silence_limit(now: datetime) -> datetime:
        return now - timedelta(seconds=weft_settings.LOST_AFTER)

    def _claim(self, now: datetime) -> bool:
        if self._stopping.is_set() or self.process is None:
            return False
        free = self.executor.free_slots()
        if free <= 0:
            return False
        runs = claim(self.jobs(), limit=free, worker=self.process, now=now, queues=self.queues)
        for run in runs:
            abort = self._aborts.setdefault(run.pk, threading.Event())
            if run.abort_requested_at is not None:
                abort.set()
            self.executor.submit(partial(self._execute, run, abort))
        return bool(runs)

    def _execute(self, run: Run, abort: threading.Event) -> None:
        try:
            execute(run, abort=abort, now=self.clock.now)
        finally:
            self._aborts.pop(run.pk, None)
            self._wake.set()

    def _on_notify(self, payload: str) -> None:
        kind, _, run_id = payload.partition(":")
        if kind == "abort":
            for pk, event in list(self._aborts.items()):
                if str(pk) == run_id:
                    event.set()
            return
        self._wake.set()

    def _log_next_fire(self) -> None:
        upcoming = (
            Schedule.objects.filter(enabled=True, armed=True, next_due__isnull=False)
            .order_by("next_due")
            .first()
        )
        if upcoming is not None:
            logger.info("next fire: %s at %s", upcoming.name, upcoming.next_due)


def _drop_broken_connections() -> None:
    """Reconnect after a database error, but keep a healthy connection for ever.

    The worker is one long request: ``close_old_connections()`` would honour
    ``CONN_MAX_AGE = 0`` and reconnect at every step of the loop.
    """
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and connection.errors_occurred:
            if not connection.is_usable():
                connection.close()
            connection.errors_occurred = False

"""The worker: the loop ``manage.py runjobs`` runs, usable without argv.

A worker is a scheduler (fires due schedules into runs) and an executor (runs claimed
runs) around one loop of steps. ``tick()`` does one round of steps and says whether any
did work, so tests call it directly; ``run()`` repeats it, sleeping through the clock
when there is nothing to do until the next due time, a NOTIFY, or the poll interval.

Every step runs inside one error boundary (:class:`~django_weft.engine.outages.Outage`): a
step that raises (the database restarted, the network blinked, a bug) is logged once,
the broken connections are dropped, and the loop backs off and tries again; only a
signal stops ``runjobs``. A run's outcome is kept in memory until the database takes
it, so an outage costs time, never an outcome.

Runs end through :class:`~django_weft.engine.finishing.AttemptReport`\\ s that the run threads
hand to the loop; the loop records them. A worker that others declared dead (it missed
its heartbeats, e.g. while paused) learns it from its own heartbeat, lets go of its runs
(their late outcomes are discarded) and registers again as a new process.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

from django.db import DatabaseError, transaction

from django_weft.conf import weft_settings
from django_weft.engine.claiming import claim, deployed_pairs
from django_weft.engine.execution import Execution, execute, report_of
from django_weft.engine.executors import Executor, load_executor
from django_weft.engine.finishing import AttemptReport, finish_plain, is_plain, record_attempt
from django_weft.engine.notify import Listener, can_listen
from django_weft.engine.outages import Outage
from django_weft.engine.pruning import prune_batch, prune_workers
from django_weft.engine.reaping import finish_lost
from django_weft.engine.scheduler import Scheduler
from django_weft.jobs.registry import Job, registry
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import Document, Run, RunStatus, Schedule, WorkerProcess
from django_weft.timing.clocks import Clock, ClockPaused, load_clock

logger = logging.getLogger("django_weft.worker")

#: A step's answer when it raised: the tick stops there, the loop backs off.
FAILED = object()

STOPPED_BY_WORKER = ErrorRecord(
    "WorkerStopped", "the worker stopped before the run reached a sleep() or check()", ""
)


def _publish_state(document: Document) -> None:
    """A run's state change, from its own thread, to the live views."""
    changes = Changes()
    changes.document(document.pk)
    publisher.publish(changes)


def _due(moment: datetime | None, now: datetime) -> bool:
    return moment is not None and moment <= now


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
        health_file: Path | None = None,
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
        #: Touched at least every second while the loop turns, database or not: what a
        #: liveness probe watches (see docs/deployment.md).
        self.health_file = health_file
        self._health_touched = 0.0
        self.scheduler = Scheduler()
        self.process: WorkerProcess | None = None
        self.outage = Outage(logger)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._forced = threading.Event()
        #: Runs this process executes, by (run id, attempt): claimed, report not recorded.
        self._executions: dict[tuple[uuid.UUID, int], Execution] = {}
        #: Reports of ended attempts, oldest first, until the database has taken them.
        #: Run threads append, the loop records and removes.
        self._reports: list[tuple[Execution | None, AttemptReport]] = []
        self._reports_lock = threading.Lock()
        self._listener: Listener | None = None
        self._next_beat: datetime | None = None
        #: When this worker may next finish other workers' runs as lost: only after it has
        #: itself reached the database for a whole lost-after window, so that a database
        #: outage, during which nobody could beat, never makes live workers look dead.
        self._reap_from: datetime | None = None
        self._next_prune: datetime | None = None
        self._deployed_pairs: tuple[tuple[str, int], ...] = ()
        self._deployed_for = -1
        # What the loop's next round looks at. Between two full looks (one per poll
        # interval, and after a wake-up it cannot place) a round fires only when a fire
        # is due or the last round fired, and claims only when the last claim filled
        # every free slot, a NOTIFY announced runs, or a retry came due: a worker busy
        # with runs does not query for schedules at every run that ends.
        self._look_everywhere = True
        self._looked_at = float("-inf")
        self._more_to_fire = True
        self._more_to_claim = True
        self._next_fire: datetime | None = None
        self._next_retry: datetime | None = None
        #: What the step running now changed: published when it ends.
        self._changes = Changes()
        #: Set when a forced stop left runs that ignored their abort behind.
        self.abandoned = False
        self.clock.attach(self)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> WorkerProcess:
        """Register this process in the database and start listening for wake-ups."""
        now = self.clock.now()
        if self.process is None:
            self.process = self._register(now)
        if can_listen() and self._listener is None:
            self._listener = Listener(self._on_notify)
            self._listener.start()
        enabled = Schedule.objects.filter(enabled=True).count()
        logger.info(
            "runjobs started as %s: %d enabled schedule(s), %d job(s), concurrency %d, clock %s",
            self.process,
            enabled,
            len(self.jobs()),
            self.executor.concurrency,
            type(self.clock).__name__,
        )
        self._log_next_fire()
        return self.process

    def run(self, *, once: bool = False) -> None:
        """Work until stopped (or, with ``once``, until nothing is due or running)."""
        try:
            if self.process is None and not self._start_through_outages():
                return
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
        """Let running runs finish within the grace, abort the rest, record every outcome
        the database will take, and deregister."""
        ended = self._wait_for_runs()
        self.executor.shutdown(wait=ended)
        self._record_remaining_reports()
        if self._listener is not None:
            self._listener.stop()
            self._listener.join(5)
        if self.process is not None:
            self._guarded(
                "deregister",
                lambda now: WorkerProcess.objects.filter(pk=self.process.pk).update(  # type: ignore[union-attr]
                    stopped_at=now
                ),
            )
        logger.info("runjobs stopped")

    def _start_through_outages(self) -> bool:
        """Start, waiting out a database that is not there yet; False if stopped first."""
        while not self._stopping.is_set():
            self._touch_health_file()
            if self._guarded("start", lambda now: self.start()) is not FAILED:
                return True
            self._stopping.wait(self.outage.wait())
        return False

    # -- the loop -------------------------------------------------------------------------

    def _loop(self, *, once: bool) -> None:
        while not self._stopping.is_set():
            self._touch_health_file()
            # A driven clock's round always looks everywhere: tests change rows between
            # two advances, and what they see must not depend on real time.
            everywhere = (
                self._look_everywhere
                or self.clock.waits_for_runs
                or time.monotonic() - self._looked_at >= self.poll_interval
            )
            if self._round(everywhere=everywhere):
                continue
            if self.outage.ongoing:
                # Real seconds, whatever the clock: the database is out there, not in it.
                self._stopping.wait(self.outage.wait())
                continue
            if self._reports:
                continue
            if self.clock.waits_for_runs and not self.executor.wait_idle(0):
                self.executor.wait_idle()
                continue
            if once and not self._live_executions() and self.executor.wait_idle(0):
                return
            # Never sleep past a heartbeat: other workers count silence as death.
            longest = min(self.poll_interval, weft_settings.HEARTBEAT_INTERVAL)
            self.clock.sleep_until(self.next_wakeup(), self._wake, longest)

    def _touch_health_file(self) -> None:
        if self.health_file is None or time.monotonic() - self._health_touched < 1.0:
            return
        self._health_touched = time.monotonic()
        try:
            self.health_file.touch()
        except OSError as error:
            logger.warning("cannot touch the health file %s: %s", self.health_file, error)

    def tick(self) -> bool:
        """One round of steps that looks at everything; True if any did work.

        Heartbeat first (a fenced worker must know before it claims), then the timeouts,
        the runs' reports, the schedules, the claim, the housekeeping, and the reports of
        runs that ended meanwhile. A step that fails ends the round: the database is
        probably gone, and the loop backs off.
        """
        return self._round(everywhere=True)

    def _round(self, *, everywhere: bool) -> bool:
        """A round of steps; without ``everywhere``, only the ones that may find work."""
        if self.outage.ongoing and self.outage.wait() > 0:
            return False
        if self.process is None and self._guarded("start", lambda now: self.start()) is FAILED:
            return False
        now = self.clock.now()
        if everywhere:
            self._look_everywhere, self._looked_at = False, time.monotonic()
        steps: list[tuple[str, Callable[[datetime], bool]]] = [
            ("heartbeat", self._beat),
            ("timeouts", self._enforce_timeouts),
            ("finish", self._record_reports),
        ]
        if not self._stopping.is_set():
            if self.schedules and (everywhere or self._more_to_fire or _due(self._next_fire, now)):
                steps.append(("schedule", self._schedule))
            if everywhere or self._more_to_claim or _due(self._next_retry, now):
                steps.append(("claim", partial(self._claim, look_for_retries=everywhere)))
            steps.append(("prune", self._prune))
        # Runs that ended meanwhile (all of them, with the inline executor) are recorded
        # in the same round.
        steps.append(("finish", self._record_reports))
        worked = False
        for name, step in steps:
            result = self._guarded(name, step)
            if result is FAILED:
                return worked
            worked = bool(result) or worked
        return worked

    def _guarded(self, name: str, step: Callable[[datetime], object]) -> object:
        """Run one step inside the error boundary; ``FAILED`` if it raised.

        What the step changed is published when it ends, whatever the end: the publisher
        reads the rows again, so a change that was rolled back publishes nothing new.
        """
        self._changes = Changes()
        try:
            result = step(self.clock.now())
        except Exception as error:
            self.outage.failed(name, error)
            # A worker that could not reach the database counts the lost-after window
            # again from the moment it can.
            self._reap_from = None
            return FAILED
        finally:
            publisher.publish(self._changes)
        if self.outage.succeeded():
            self._wake.set()
        return result

    def next_wakeup(self) -> datetime | None:
        """The next moment something is due here: a fire, a retry, a run's timeout.

        From what the last rounds read; a full look refreshes it at least once per poll
        interval, which is also the longest the loop sleeps.
        """
        moments = [self._next_retry, *self._deadlines()]
        if self.schedules:
            moments.append(self._next_fire)
        return min((moment for moment in moments if moment is not None), default=None)

    def _deadlines(self) -> list[datetime]:
        grace = timedelta(seconds=weft_settings.TIMEOUT_GRACE)
        return [
            execution.deadline + grace if execution.timed_out else execution.deadline
            for execution in self._executions.values()
            if execution.deadline is not None and not execution.given_up
        ]

    def jobs(self) -> list[Job]:
        return [job for job in registry if self.job_names is None or job.name in self.job_names]

    def _deployed(self) -> tuple[tuple[str, int], ...]:
        """What this worker claims, worked out again only when the registry changes."""
        if self._deployed_for != registry.generation:
            self._deployed_pairs = deployed_pairs(self.jobs())
            self._deployed_for = registry.generation
        return self._deployed_pairs

    # -- steps ------------------------------------------------------------------------------

    def _register(self, now: datetime) -> WorkerProcess:
        process = WorkerProcess.objects.create(
            hostname=socket.gethostname(), pid=os.getpid(), started_at=now, last_beat=now
        )
        self._next_beat = now + timedelta(seconds=weft_settings.HEARTBEAT_INTERVAL)
        self._reap_from = now + timedelta(seconds=weft_settings.LOST_AFTER)
        return process

    def _beat(self, now: datetime) -> bool:
        """Keep this process's heartbeat; notice when others declared it dead; reap."""
        assert self.process is not None
        if self._next_beat is not None and now < self._next_beat:
            return False
        alive = WorkerProcess.objects.filter(pk=self.process.pk, stopped_at__isnull=True).update(
            last_beat=now
        )
        self._next_beat = now + timedelta(seconds=weft_settings.HEARTBEAT_INTERVAL)
        if not alive:
            self._fence(now)
            return True
        if self._reap_from is None:
            self._reap_from = now + timedelta(seconds=weft_settings.LOST_AFTER)
        if now >= self._reap_from:
            silent_since = now - timedelta(seconds=weft_settings.LOST_AFTER)
            lost = finish_lost(now=now, silent_since=silent_since, changes=self._changes)
            if lost:
                logger.warning("finished %d run(s) of silent workers as lost", lost)
        return False

    def _fence(self, now: datetime) -> None:
        """Others declared this process dead: let go of its runs and register afresh."""
        assert self.process is not None
        dead = self.process
        runs = list(self._executions.values())
        logger.error(
            "this worker (%s) was declared dead by another: it missed its heartbeats for "
            "more than %ss. Its %d run(s) were finished as lost elsewhere; their outcomes "
            "will be discarded. Registering again as a new process.",
            dead,
            weft_settings.LOST_AFTER,
            len(runs),
        )
        for execution in runs:
            execution.given_up = True
            execution.abort.set()
            self.executor.abandon(execution.handle)  # type: ignore[arg-type]
        self.process = self._register(now)
        logger.info("registered again as %s (was %s)", self.process, dead)

    def _enforce_timeouts(self, now: datetime) -> bool:
        """Ask runs past their timeout to stop; give up on those that ignore it."""
        grace = timedelta(seconds=weft_settings.TIMEOUT_GRACE)
        worked = False
        for execution in list(self._executions.values()):
            if execution.given_up or execution.deadline is None or now < execution.deadline:
                continue
            if not execution.timed_out:
                execution.timed_out = True
                execution.abort.set()
                logger.warning(
                    "%s run %s passed its timeout; asking it to stop",
                    execution.run.job,
                    execution.run.pk,
                )
                worked = True
            elif now >= execution.deadline + grace:
                self._give_up(execution, now)
                worked = True
        return worked

    def _give_up(self, execution: Execution, now: datetime) -> None:
        """Finish a run that ignored its timeout as lost, and free its slot."""
        run = execution.run
        execution.given_up = True
        self.executor.abandon(execution.handle)  # type: ignore[arg-type]
        message = (
            f"the run passed its timeout and did not stop within {weft_settings.TIMEOUT_GRACE:g}s"
            " of being asked; its thread was abandoned"
        )
        logger.error("%s run %s: %s", run.job, run.pk, message)
        lost = report_of(execution, RunStatus.LOST, error=ErrorRecord("Timeout", message, ""))
        self._deliver(None, lost)

    def _record_reports(self, now: datetime) -> bool:
        """Record the reports of ended attempts, all in one transaction per round.

        The plain ones (no hook, schedule or retry) are one statement each; the others
        each take the full finish (hook, schedule, retry) in a savepoint of their own. A
        report leaves the queue only once that transaction has committed, so a database
        error keeps every one of them for the next round.
        """
        with self._reports_lock:
            waiting = list(self._reports)
        if not waiting:
            return False
        plain = [
            entry
            for entry in waiting
            if entry[0] is not None and not entry[0].given_up and is_plain(entry[1])
        ]
        finished = {id(entry) for entry in plain}
        with transaction.atomic():
            if plain:
                finish_plain([report for _, report in plain], now=now, changes=self._changes)
            for entry in waiting:
                if id(entry) in finished:
                    continue
                execution, report = entry
                if execution is not None and execution.given_up:
                    logger.warning(
                        "late outcome of %s run %s (%s) discarded: the run was given up on",
                        report.job,
                        report.run_id,
                        report.status,
                    )
                else:
                    self._record(report, now)
        self._done_with(waiting)
        return True

    def _done_with(self, entries: list[tuple[Execution | None, AttemptReport]]) -> None:
        done = {id(entry) for entry in entries}
        with self._reports_lock:
            self._reports = [entry for entry in self._reports if id(entry) not in done]
        for execution, _ in entries:
            if execution is not None:
                self._executions.pop(execution.key, None)

    def _record(self, report: AttemptReport, now: datetime) -> None:
        """Record one report; one the database refuses for another reason than being away
        is recorded as a failure, so that it cannot block the reports behind it."""
        # A finish hook may start runs, a finish may start a buffered fire or queue a retry.
        self._more_to_claim = True
        try:
            recorded = record_attempt(report, now=now, changes=self._changes)
        except DatabaseError:
            raise
        except Exception as error:
            logger.exception("could not record the outcome of %s run %s", report.job, report.run_id)
            failure = ErrorRecord(
                type(error).__name__,
                f"the outcome ({report.status}) could not be recorded: {error}",
                "",
            )
            failed = replace(report, status=RunStatus.FAILED, result=None, error=failure)
            record_attempt(failed, now=now, changes=self._changes)
            return
        if recorded is not None and recorded.retry_at is not None:
            self._next_retry = min(filter(None, (self._next_retry, recorded.retry_at)))

    def _schedule(self, now: datetime) -> bool:
        fired = self.scheduler.tick(now, self._changes)
        self._more_to_fire = fired
        self._next_fire = self.scheduler.next_due()
        if fired:
            self._more_to_claim = True
        return fired

    def _claim(self, now: datetime, *, look_for_retries: bool = False) -> bool:
        assert self.process is not None
        if look_for_retries or _due(self._next_retry, now):
            self._next_retry = Run.objects.next_retry()
        free = self.executor.free_slots()
        if free <= 0:
            return False
        runs = claim(self._deployed(), limit=free, worker=self.process, now=now, queues=self.queues)
        self._more_to_claim = len(runs) == free
        for run in runs:
            self._changes.run(run.pk)
            job = registry.deployed(run.job, run.job_version)
            timeout = job.timeout if job is not None else None
            execution = Execution(
                run=run,
                worker_id=self.process.pk,
                deadline=now + timedelta(seconds=timeout) if timeout else None,
            )
            if run.abort_requested_at is not None:
                execution.abort.set()
            self._executions[execution.key] = execution
            execution.handle = self.executor.submit(partial(self._execute, execution))
        return bool(runs)

    def _execute(self, execution: Execution) -> None:
        try:
            execute(
                execution,
                deliver=partial(self._deliver, execution),
                on_state_change=_publish_state,
            )
        finally:
            self._wake.set()

    def _deliver(self, execution: Execution | None, report: AttemptReport) -> None:
        with self._reports_lock:
            self._reports.append((execution, report))

    def _prune(self, now: datetime) -> bool:
        """Delete old finished runs in bounded batches, when ``WEFT_PRUNE_AFTER`` asks."""
        keep = weft_settings.PRUNE_AFTER
        if keep is None or (self._next_prune is not None and now < self._next_prune):
            return False
        batch, before = weft_settings.PRUNE_BATCH_SIZE, now - keep
        deleted = prune_batch(before=before, size=batch)
        if deleted < batch:
            prune_workers(before=before)
            self._next_prune = now + weft_settings.PRUNE_INTERVAL
        if deleted:
            logger.info("pruned %d run(s) that finished before %s", deleted, before.isoformat())
        return deleted > 0

    def _on_notify(self, payload: str) -> None:
        kind, _, run_id = payload.partition(":")
        if kind == "abort":
            for execution in list(self._executions.values()):
                if str(execution.run.pk) == run_id:
                    execution.abort.set()
            return
        if kind == "runs":
            self._more_to_claim = True
        elif kind == "schedules":
            self._more_to_fire = True
        else:
            self._look_everywhere = True
        self._wake.set()

    def _log_next_fire(self) -> None:
        upcoming = (
            Schedule.objects.filter(enabled=True, armed=True, next_due__isnull=False)
            .order_by("next_due")
            .first()
        )
        if upcoming is not None:
            logger.info("next fire: %s at %s", upcoming.name, upcoming.next_due)

    # -- shutdown ---------------------------------------------------------------------------

    def _wait_for_runs(self) -> bool:
        """Wait out the grace, then abort; True once every run has ended.

        A second signal stops the waiting. Runs that still have not reached a
        ``sleep()``/``check()`` then are finished as aborted here, because the process
        is about to exit under them; ``abandoned`` tells the command to exit at once.
        """
        if self._drain(self.shutdown_grace):
            return True
        running = [execution for execution in self._executions.values() if not execution.given_up]
        logger.warning("aborting %d run(s) still running at shutdown", len(running))
        self._guarded("abort at shutdown", partial(self._request_aborts, running))
        if self._drain(None):
            return True
        for execution in running:
            if execution.key in self._executions and not execution.given_up:
                execution.given_up = True
                stopped = report_of(execution, RunStatus.ABORTED, error=STOPPED_BY_WORKER)
                self._deliver(None, stopped)
        self.abandoned = True
        return False

    def _request_aborts(self, executions: list[Execution], now: datetime) -> None:
        for run in Run.objects.filter(pk__in=[e.run.pk for e in executions]):
            if run.record_abort_request(now):
                self._changes.run(run.pk)
        for execution in executions:
            execution.abort.set()

    def _drain(self, seconds: float | None) -> bool:
        """Keep beating and recording while runs end; True once none is left.

        ``seconds=None`` waits until a second signal, then a second more.
        """
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            self._shutdown_steps()
            if not self._live_executions():
                return True
            if self._forced.is_set():
                self.executor.wait_idle(1.0)
                self._shutdown_steps()
                return not self._live_executions()
            if deadline is not None and time.monotonic() >= deadline:
                return False
            self.executor.wait_idle(0.1)

    def _shutdown_steps(self) -> None:
        if self.process is None or (self.outage.ongoing and self.outage.wait() > 0):
            return
        for name, step in (("heartbeat", self._beat), ("finish", self._record_reports)):
            if self._guarded(name, step) is FAILED:
                return

    def _live_executions(self) -> bool:
        return any(not execution.given_up for execution in self._executions.values())

    def _record_remaining_reports(self) -> None:
        """Record what is left; through an outage, until the grace is over or a second signal."""
        deadline = time.monotonic() + max(self.shutdown_grace, 1.0)
        while self._reports and self.process is not None:
            if self._guarded("finish", self._record_reports) is not FAILED:
                return
            if self._forced.is_set() or time.monotonic() >= deadline:
                break
            time.sleep(self.outage.wait())
        if self._reports:
            logger.error(
                "exiting with %d outcome(s) the database did not take; other workers will "
                "finish those runs as lost: %s",
                len(self._reports),
                ", ".join(f"{report.run_id} ({report.status})" for _, report in self._reports),
            )

"""The worker: the loop ``manage.py runjobs`` runs, usable without argv.

A worker is a scheduler (fires due schedules into runs) and an executor (runs claimed
runs) around one loop of steps. ``tick()`` does one round of steps and says whether any
did work, so tests call it directly; ``run()`` repeats it, sleeping through the clock
when there is nothing to do until the next due time, a NOTIFY, or the poll interval.

Every step runs inside one error boundary (:class:`~django_weft.engine.database.outages.Outage`): a
step that raises (the database restarted, the network blinked, a bug) is logged once,
the broken connections are dropped, and the loop backs off and tries again; only a
signal stops ``runjobs``. A run's outcome is kept in memory until the database takes
it, so an outage costs time, never an outcome.

The loop, its life cycle and the order of its steps are here; what the steps do is in
modules of their own beside it:

- :mod:`~django_weft.engine.worker.options`: what the worker was told (flags, keywords);
- :mod:`~django_weft.engine.worker.inflight`: the runs it executes, claimed, not yet recorded;
- :mod:`~django_weft.engine.worker.membership`: its row, heartbeat, liveness lock, fence, reaping;
- :mod:`~django_weft.engine.worker.reports`: the outcomes handed to the loop, kept through outages;
- :mod:`~django_weft.engine.worker.timeouts`: runs past their timeout, asked to stop, given up;
- :mod:`~django_weft.engine.worker.lookout`: where the next round looks, and NOTIFYs;
- :mod:`~django_weft.engine.worker.intake`: the claims, and each run's start on a thread;
- :mod:`~django_weft.engine.worker.process_pool`: the child processes of
  ``executor="process"`` jobs;
- :mod:`~django_weft.engine.worker.housekeeping`: pruning, the overview's history, the health file;
- :mod:`~django_weft.engine.worker.shutdown`: the grace, the aborts, the last reports.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from functools import partial
from typing import Any

from django_weft.conf import weft_settings
from django_weft.engine.database.notify import Listener, listen_alias
from django_weft.engine.database.outages import FAILED, Outage, Step
from django_weft.engine.schedules.scheduler import Scheduler
from django_weft.engine.worker.executors import Executor, load_executor
from django_weft.engine.worker.housekeeping import Chores, HealthFile, loop_pulse
from django_weft.engine.worker.inflight import InFlight
from django_weft.engine.worker.intake import Intake
from django_weft.engine.worker.lookout import Lookout
from django_weft.engine.worker.membership import Membership
from django_weft.engine.worker.options import WorkerOptions
from django_weft.engine.worker.process_pool import ProcessPool
from django_weft.engine.worker.reports import Reports
from django_weft.engine.worker.shutdown import Shutdown
from django_weft.engine.worker.timeouts import Timeouts
from django_weft.jobs.connections import StatementLimits
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import Schedule, WorkerProcess
from django_weft.timing import clocks
from django_weft.timing.clocks import Clock, ClockPaused

logger = logging.getLogger("django_weft.worker")


class Worker:
    """One ``runjobs`` process's worth of scheduling and executing.

    ``clock`` defaults to the process's (:func:`~django_weft.timing.clocks.current_clock`),
    ``executor`` (an import string or an :class:`Executor`) to ``WEFT_EXECUTOR``; the
    other keywords go to :meth:`WorkerOptions.of <.options.WorkerOptions.of>`
    (``concurrency``, ``queues``, ``jobs``, ``schedules``, ``shutdown_grace``,
    ``poll_interval``, ``health_file``).
    """

    def __init__(
        self, *, clock: Clock | None = None, executor: str | Executor | None = None, **options: Any
    ) -> None:
        self.options = WorkerOptions.of(**options)
        self.clock = clock or clocks.current_clock()
        self.executor = (
            executor
            if isinstance(executor, Executor)
            else load_executor(executor, self.options.concurrency)
        )
        #: The children that run the jobs of the process executor, one per run at most.
        self.pool = ProcessPool(self.executor.concurrency)
        self.scheduler = Scheduler()
        self.outage = Outage(logger)
        self.in_flight = InFlight(self.executor)
        self.membership = Membership(self.in_flight)
        self.reports = Reports()
        self._wake = threading.Event()
        self.timeouts = Timeouts(self.in_flight, self.reports.deliver)
        self.shutdown = Shutdown(
            grace=self.options.shutdown_grace,
            wake=self._wake,
            in_flight=self.in_flight,
            reports=self.reports,
            outage=self.outage,
            membership=self.membership,
            guarded=self._guarded,
            record=self._record_reports,
            timeouts=self.timeouts.step,
        )
        self.lookout = Lookout(self.options.poll_interval, self._wake, self.in_flight)
        self.intake = Intake(
            self.options,
            membership=self.membership,
            in_flight=self.in_flight,
            reports=self.reports,
            lookout=self.lookout,
            wake=self._wake,
            pool=self.pool,
            clock=self.clock,
            shutdown=self.shutdown,
        )
        self.chores = Chores()
        self.health_file = HealthFile(self.options.health_file)
        self.statement_limits = StatementLimits()
        self._listener: Listener | None = None
        #: Whether this round's first claim took every free slot.
        self._filled = False

    @property
    def process(self) -> WorkerProcess | None:
        """This worker's row; a new one after a fence."""
        return self.membership.process

    @property
    def abandoned(self) -> bool:
        """Whether a forced stop left runs that ignored their abort behind."""
        return self.shutdown.abandoned

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> WorkerProcess:
        """Register this process in the database and start listening for wake-ups."""
        self.statement_limits.install()
        process = self.membership.process or self.membership.register(self.clock.now())
        alias = listen_alias()
        if alias is not None and self._listener is None:
            self._listener = Listener(alias, self.lookout.on_notify)
            self._listener.start()
        enabled = Schedule.objects.filter(enabled=True).count()
        logger.info(
            "runjobs started as %s: %d enabled schedule(s), %d job(s), concurrency %d, clock %s",
            process,
            enabled,
            len(self.intake.jobs()),
            self.executor.concurrency,
            type(self.clock).__name__,
        )
        upcoming = (
            Schedule.objects.filter(enabled=True, armed=True, next_due__isnull=False)
            .order_by("next_due")
            .first()
        )
        if upcoming is not None:
            logger.info("next fire: %s at %s", upcoming.name, upcoming.next_due)
        return process

    def run(self, *, once: bool = False) -> None:
        """Work until stopped (or, with ``once``, until nothing is due or running)."""
        try:
            if self.process is None and not self._start_through_outages():
                return
            self._loop(once=once)
        finally:
            self.close()

    def run_until_paused(self) -> None:
        """Work until a driven clock pauses (``ClockPaused``): a ``Rehearsal``'s advance."""
        if self.process is None:
            self.start()
        try:
            self._loop(once=False)
        except ClockPaused:
            return

    @property
    def is_stopping(self) -> bool:
        return self.shutdown.requested.is_set()

    def stop(self) -> None:
        """Stop claiming, on every thread; running runs get the shutdown grace to finish."""
        self.shutdown.request()

    def force_stop(self) -> None:
        """Abort running runs now instead of waiting for the grace period."""
        self.shutdown.force()

    def close(self) -> None:
        """Let running runs finish within the grace, abort the rest, record every outcome
        the database will take, and deregister."""
        ended = self.shutdown.wait_for_runs()
        self.executor.shutdown(wait=ended)
        self.pool.close()
        self.shutdown.record_remaining_reports()
        if self._listener is not None:
            self._listener.stop()
            self._listener.join(5)
        if self.process is not None:
            self._guarded("deregister", lambda now, _: self.membership.deregister(now))
        self.membership.let_go()
        self.statement_limits.uninstall()
        loop_pulse.stop()
        logger.info("runjobs stopped")

    def _start_through_outages(self) -> bool:
        """Start, waiting out a database that is not there yet; False if stopped first."""
        while not self.is_stopping:
            self.health_file.touch()
            if self._guarded("start", lambda now, _: self.start()) is not FAILED:
                return True
            self.shutdown.requested.wait(self.outage.wait())
        return False

    # -- the loop -------------------------------------------------------------------------

    def _loop(self, *, once: bool) -> None:
        while not self.is_stopping:
            self.health_file.touch()
            if self._round(everywhere=self.lookout.everywhere(driven=self.clock.waits_for_runs)):
                continue
            if self.outage.ongoing:
                # Real seconds, whatever the clock: the database is out there, not in it.
                self.shutdown.requested.wait(self.outage.wait())
                continue
            if self.reports.ready():
                continue
            if self.clock.waits_for_runs and not self.executor.wait_idle(0):
                self.executor.wait_idle()
                continue
            if once and not self.in_flight.live() and self.executor.wait_idle(0):
                return
            # Never sleep past a heartbeat: other workers count silence as death.
            longest = min(self.options.poll_interval, weft_settings.HEARTBEAT_INTERVAL)
            self.clock.sleep_until(self.next_wakeup(), self._wake, longest)

    def tick(self) -> bool:
        """One round of steps that looks at everything; True if any did work.

        The claim first, after only the timeouts (no query): a run a NOTIFY announced
        waits for no other step. Safe before the heartbeat: a claim names this worker's
        registration (a worker declared dead claims nothing), and the heartbeat fences
        it before the finish step. Then the schedules, the look for task paths and the
        next retry, a second claim if those left runs and the first left slots free,
        reaping, the housekeeping, and the reports of runs that ended meanwhile. A
        failing step ends the round: the database is probably gone; the loop backs off.
        """
        return self._round(everywhere=True)

    def _round(self, *, everywhere: bool) -> bool:
        """A round of steps; without ``everywhere``, only the ones that may find work."""
        if self.outage.ongoing and self.outage.wait() > 0:
            return False
        if self.process is None and self._guarded("start", lambda now, _: self.start()) is FAILED:
            return False
        now = self.clock.now()
        if everywhere:
            self.lookout.looked_everywhere()
        self._filled = False
        steps: list[tuple[str, Step]] = [("timeouts", self.timeouts.step)]
        # A quiet worker (see membership) takes no new work: no claim, no fire.
        taking = not (self.is_stopping or self.membership.quiet)
        if taking and (everywhere or self.lookout.claim(now)):
            steps.append(("claim", self._claim_first))
        steps.append(("heartbeat", self.membership.beat))
        steps.append(("finish", self._record_reports))
        if not self.is_stopping:
            if taking and self.options.schedules and (everywhere or self.lookout.fire(now)):
                steps.append(("schedule", self._schedule))
            steps.append(("look", partial(self.intake.look, everywhere=everywhere)))
            steps.append(("claim", self._claim_more))
            steps.append(("reap", self.membership.reap))
            steps.extend(self.chores.steps)
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

    def _guarded(self, name: str, step: Step) -> object:
        """Run one step inside the error boundary, publishing what it changed however it
        ends (the publisher reads the rows again: a rolled-back change publishes nothing
        new); ``FAILED`` if it raised, or the publishing did (it asks the connection).
        """
        changes = Changes()
        try:
            try:
                result = step(self.clock.now(), changes)
            finally:
                publisher.publish(changes)
        except Exception as error:
            self.outage.failed(name, error)
            self.membership.out_of_reach()
            return FAILED
        if self.outage.succeeded():
            self._wake.set()
        return result

    def next_wakeup(self) -> datetime | None:
        """The next moment something is due here: a fire, a retry or rate slot, a timeout
        (only a timeout for a quiet worker, which claims and fires nothing). From what the
        last rounds read; a full look refreshes it at least once per poll interval."""
        moments: list[datetime | None] = [*self.timeouts.moments()]
        if not self.membership.quiet:
            moments += [self.lookout.next_retry, self.lookout.next_slot]
            moments += [self.lookout.next_fire] if self.options.schedules else []
        return min((moment for moment in moments if moment is not None), default=None)

    # -- steps ------------------------------------------------------------------------------

    def _record_reports(self, now: datetime, changes: Changes) -> bool:
        """Record the reports of ended attempts (see :meth:`Reports.record`)."""
        recorded = self.reports.record(now, changes)
        if recorded is None:
            return False
        for execution in recorded.done:
            self.in_flight.done(execution)
        if recorded.finished_fully:
            # A finish hook may start runs, a finish may start a buffered fire or retry.
            self.lookout.more_to_claim = True
        if recorded.retry_at is not None:
            self.lookout.retry_at(recorded.retry_at)
        return True

    def _claim_first(self, now: datetime, changes: Changes) -> bool:
        claimed = self.intake.step(now, changes)
        self._filled = claimed and self.lookout.more_to_claim  # every free slot taken
        return claimed

    def _claim_more(self, now: datetime, changes: Changes) -> bool:
        """A second claim if the first left slots free and the beat did not quiet the worker."""
        if self._filled or self.membership.quiet or not self.lookout.claim(now):
            return False
        return self.intake.step(now, changes)

    def _schedule(self, now: datetime, changes: Changes) -> bool:
        fired = self.scheduler.tick(now, changes)
        self.lookout.more_to_fire = fired
        self.lookout.next_fire = self.scheduler.next_due()
        if fired:
            self.lookout.more_to_claim = True
        return fired

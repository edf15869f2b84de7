"""How a worker stops: no new runs, a grace for running ones, then aborts, and every
outcome the database will take recorded before the process goes.

A first signal (``stop()``) ends claiming and gives running runs ``shutdown_grace``
seconds to finish, the worker beating, recording and keeping their timeouts meanwhile;
then it requests an abort of each run still going, and waits for them to reach a
``sleep()``/``check()``. A second signal (``force()``) stops the waiting: runs that still
have not ended are finished as aborted here (``WorkerStopped``), because the process is
about to exit under them, and ``abandoned`` tells ``runjobs`` to exit at once. What is
left in the report queue is recorded last, through an outage if need be, for as long as
the grace allows.

The end of claiming is kept where each claim is made, not where the loop decides to
claim (:meth:`Shutdown.unless_stopping`): a round the loop began before the signal, or a
run thread that ended its run just then, goes on to its claim step, and must take
nothing. Every claim looks at the stop and counts itself under way in one step, and the
"stopping" line is logged only when no claim is under way: by the stop, or by the last
claim under way as it ends. So a claim either ended before the line, or sees the stop
and takes nothing; claims on several threads still go on side by side, and the signal
handler never waits for one.

Apart from the loop because it runs after it, in real seconds whatever the clock; of
the loop's steps it keeps up only the heartbeat, the recording and the timeouts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial

from django_weft.engine.database.outages import FAILED, Outage, Step
from django_weft.engine.worker.execution import Execution, report_of
from django_weft.engine.worker.inflight import InFlight
from django_weft.engine.worker.membership import Membership
from django_weft.engine.worker.reports import Reports
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus

logger = logging.getLogger("django_weft.worker")

STOPPED_BY_WORKER = ErrorRecord(
    "WorkerStopped", "the worker stopped before the run reached a sleep() or check()", ""
)

#: Seconds between two tries at reports held back behind locked rows, at shutdown.
HELD_BACK_PAUSE = 0.2

#: Runs a step inside the loop's error boundary; returns ``FAILED`` if it raised.
Guarded = Callable[[str, Step], object]


class Shutdown:
    """The stop requests a worker received, and the waiting they call for."""

    def __init__(
        self,
        *,
        grace: float,
        wake: threading.Event,
        in_flight: InFlight,
        reports: Reports,
        outage: Outage,
        membership: Membership,
        guarded: Guarded,
        record: Step,
        timeouts: Step,
    ) -> None:
        self.grace = grace
        #: Set by the first stop: nothing is claimed or fired any more, and the loop ends.
        self.requested = threading.Event()
        #: Guards ``_claiming`` and ``_announced``, for a few statements at a time (never
        #: across a claim), and is never waited for by a stop: the signal handler runs on
        #: the loop's thread, which may hold it when the signal comes.
        self._lock = threading.Lock()
        #: How many claims are under way, on any thread.
        self._claiming = 0
        #: Whether "stopping" was logged.
        self._announced = False
        #: Set by a second stop: running runs are aborted now, not after the grace.
        self.forced = threading.Event()
        #: Set when a forced stop left runs that ignored their abort behind.
        self.abandoned = False
        self._wake = wake
        self._in_flight = in_flight
        self._reports = reports
        self._outage = outage
        self._membership = membership
        self._guarded = guarded
        #: The loop's step that records the waiting reports.
        self._record = record
        #: The loop's step that keeps the timeouts of the runs in flight.
        self._timeouts = timeouts

    def request(self) -> None:
        """Stop claiming; running runs get the grace to finish.

        The stop is in force at once: a claim that has not begun takes nothing. It is
        logged once no claim is under way on another thread (by that claim, as it ends,
        if one is), so that from the "stopping" line on no thread of this worker claims
        a run. The signal handler never waits here for a claim to end.
        """
        self.requested.set()
        self._wake.set()
        self._announce()

    def unless_stopping(self, claim: Callable[[], list[Run]]) -> list[Run]:
        """The runs ``claim`` takes, or none (without calling it) once a stop was requested.

        Every claim of the worker, the loop's and the run threads', goes through here.
        Claims on several threads go on side by side; only the saying of the stop waits
        for them.
        """
        try:
            with self._lock:
                if self.requested.is_set():
                    return []
                self._claiming += 1
            try:
                return claim()
            finally:
                with self._lock:
                    self._claiming -= 1
        finally:
            if self.requested.is_set():
                # A stop that came meanwhile may have left the saying of it to this claim.
                self._announce()

    def _announce(self) -> None:
        """Log the stop, once, when no claim is under way. Whoever finds a claim under
        way, or the lock taken, leaves it: every claim comes back here as it ends (see
        :meth:`unless_stopping`), so the last one says it."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self._claiming == 0 and not self._announced:
                self._announced = True
                logger.info("stopping: no new runs; waiting up to %ss for running ones", self.grace)
        finally:
            self._lock.release()

    def force(self) -> None:
        """Abort running runs now instead of waiting for the grace."""
        self.forced.set()
        self.request()

    def wait_for_runs(self) -> bool:
        """Wait out the grace, then abort; True once every run has ended."""
        if self._drain(self.grace):
            return True
        running = self._in_flight.live()
        logger.warning("aborting %d run(s) still running at shutdown", len(running))
        self._guarded("abort at shutdown", partial(_request_aborts, running))
        if self._drain(None):
            return True
        for execution in running:
            if execution in self._in_flight and not execution.given_up:
                execution.given_up = True
                stopped = report_of(execution, RunStatus.ABORTED, error=STOPPED_BY_WORKER)
                self._reports.deliver(None, stopped)
        self.abandoned = True
        return False

    def record_remaining_reports(self) -> None:
        """Record what is left; through an outage, until the grace is over or a second stop."""
        deadline = time.monotonic() + max(self.grace, 1.0)
        while self._reports:
            recorded = self._guarded("finish", self._record) is not FAILED
            if recorded and not self._reports:
                return
            if self.forced.is_set() or time.monotonic() >= deadline:
                break
            # After an outage, its back-off; after a row held locked, a short wait.
            time.sleep(self._outage.wait() or HELD_BACK_PAUSE)
        if self._reports:
            logger.error(
                "exiting with %d outcome(s) the database did not take; other workers will "
                "finish those runs as lost: %s",
                len(self._reports),
                self._reports.describe(),
            )

    def _drain(self, seconds: float | None) -> bool:
        """Keep beating and recording while runs end; True once none is left.

        ``seconds=None`` waits until a second stop, then a second more.
        """
        executor = self._in_flight.executor
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            self._keep_up()
            if not self._in_flight.live():
                return True
            if self.forced.is_set():
                executor.wait_idle(1.0)
                self._keep_up()
                return not self._in_flight.live()
            if deadline is not None and time.monotonic() >= deadline:
                return False
            executor.wait_idle(0.1)

    def _keep_up(self) -> None:
        """Keep the timeouts, beat and record, and nothing else: what a stopping worker
        still does. It beats, so nobody else takes its runs past their timeouts: it keeps
        them itself."""
        outage = self._outage
        if self._membership.process is None or (outage.ongoing and outage.wait() > 0):
            return
        steps = (
            ("timeouts", self._timeouts),
            ("heartbeat", self._membership.beat),
            ("finish", self._record),
        )
        for name, step in steps:
            if self._guarded(name, step) is FAILED:
                return


def _request_aborts(executions: list[Execution], now: datetime, changes: Changes) -> None:
    for run in Run.objects.filter(pk__in=[e.run.pk for e in executions]):
        if run.record_abort_request(now):
            changes.run(run.pk)
    for execution in executions:
        execution.abort.set()

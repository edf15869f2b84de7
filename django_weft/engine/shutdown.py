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
nothing. Every claim looks at the stop, and makes its statement, holding a lock; the
"stopping" line is logged holding it too, by the stop or, when a claim was under way, by
that claim as it ends. So a claim either ended before the line, or sees the stop and
takes nothing; and the signal handler never waits for a claim.

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

from django_weft.engine.execution import Execution, report_of
from django_weft.engine.inflight import InFlight
from django_weft.engine.membership import Membership
from django_weft.engine.outages import FAILED, Outage, Step
from django_weft.engine.reports import Reports
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
        #: Held by a claim from its look at ``requested`` to the end of its statement, and
        #: while "stopping" is logged. Never waited for by a stop: the signal handler
        #: runs on the loop's thread, which may be inside a claim when the signal comes.
        self._claims = threading.Lock()
        #: Whether "stopping" was logged (read and written holding ``_claims``).
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
        """
        try:
            with self._claims:
                if self.requested.is_set():
                    return []
                return claim()
        finally:
            if self.requested.is_set():
                # A stop that came during this claim left the saying of it to the claim.
                self._announce()

    def _announce(self) -> None:
        """Log the stop, once, if no claim is under way; else the claim's end comes back
        here (see :meth:`unless_stopping`), so the last one to let go says it."""
        if not self._claims.acquire(blocking=False):
            return
        try:
            if not self._announced:
                self._announced = True
                logger.info("stopping: no new runs; waiting up to %ss for running ones", self.grace)
        finally:
            self._claims.release()

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

"""This process among the workers: its row, its signs of life, its fence, and reaping others.

Every ``runjobs`` process registers a ``WorkerProcess`` row and beats it every
``WEFT_HEARTBEAT_INTERVAL`` seconds; on PostgreSQL it also holds its liveness lock on a
connection of its own (:mod:`~django_weft.engine.worker.liveness`). A worker whose row is silent
for ``WEFT_LOST_AFTER`` seconds and (on PostgreSQL) whose lock nobody holds counts as
dead, and any other worker then finishes its runs as lost. This module keeps both sides
of that contract together, because they must agree on the clock and the windows:

- a worker learns it was declared dead (it was paused, say) from its own heartbeat,
  lets go of its runs (their late outcomes are discarded) and registers again as a new
  process: the *fence*;
- a worker reaps others only once it has itself reached the database for a whole
  lost-after window, so that a database outage, during which nobody could beat, never
  makes live workers look dead;
- a worker that is alive but has missed :data:`MISSED_BEATS` heartbeats (paused, hung)
  keeps its runs, except those past their timeout and grace: others finish those as
  lost (``Timeout``), as its own loop would have (:mod:`~django_weft.engine.worker.reaping`).

Each beat also reads whether an operator quieted the worker (its row's ``quiet``, set
through :func:`django_weft.operations.quiet_worker_for`): the loop then claims and fires
nothing until it is resumed. A fence registers the new row quiet if the old one was.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import datetime, timedelta

from django_weft.conf import weft_settings
from django_weft.engine.worker.inflight import InFlight
from django_weft.engine.worker.liveness import LivenessLock, uses_liveness_lock
from django_weft.engine.worker.reaping import finish_lost, finish_overdue
from django_weft.live.changes import Changes
from django_weft.models import WorkerProcess

logger = logging.getLogger("django_weft.worker")

#: Heartbeats a worker has missed when others keep the timeouts of its runs for it. Its
#: loop never sleeps past a beat, and keeps the timeouts before it beats: a worker that
#: missed two is not turning it (a live one is at most one interval and a round late).
MISSED_BEATS = 2


class Membership:
    """One worker's registration, heartbeat and reaping, over the runs it executes."""

    def __init__(self, in_flight: InFlight) -> None:
        self.in_flight = in_flight
        self.process: WorkerProcess | None = None
        self._next_beat: datetime | None = None
        #: When this worker may next finish other workers' runs as lost.
        self._reap_from: datetime | None = None
        #: Whether the last beat went through: the reap step follows it.
        self._reap_due = False
        self.liveness: LivenessLock | None = None
        #: Whether an operator quieted this worker, as of its last beat.
        self.quiet = False

    def register(self, now: datetime) -> WorkerProcess:
        """Register this process (again, after a fence) as a new ``WorkerProcess``, and
        hold its liveness lock (on PostgreSQL) from now on."""
        self.process = WorkerProcess.objects.create(
            hostname=socket.gethostname(),
            pid=os.getpid(),
            started_at=now,
            last_beat=now,
            quiet=self.quiet,
        )
        self._next_beat = now + timedelta(seconds=weft_settings.HEARTBEAT_INTERVAL)
        self._reap_from = now + timedelta(seconds=weft_settings.LOST_AFTER)
        if self.liveness is None and uses_liveness_lock():
            alias = weft_settings.LIVENESS_DATABASE
            assert alias is not None
            self.liveness = LivenessLock(alias)
            self.liveness.start()
        if self.liveness is not None:
            self.liveness.hold(self.process.pk)
        return self.process

    def beat(self, now: datetime, changes: Changes) -> bool:
        """Beat when due and read whether the worker is quiet; fence when declared dead.
        True if it fenced."""
        assert self.process is not None
        if self._next_beat is not None and now < self._next_beat:
            return False
        row = WorkerProcess.objects.filter(pk=self.process.pk, stopped_at__isnull=True)
        alive = row.update(last_beat=now)
        self._next_beat = now + timedelta(seconds=weft_settings.HEARTBEAT_INTERVAL)
        if not alive:
            self._fence(now)
            return True
        self._hear_quiet(bool(row.values_list("quiet", flat=True).first()))
        if self._reap_from is None:
            self._reap_from = now + timedelta(seconds=weft_settings.LOST_AFTER)
        self._reap_due = True
        return False

    def reap(self, now: datetime, changes: Changes) -> bool:
        """After each beat, once this worker has reached the database for a whole
        lost-after window: finish as lost the runs of silent workers past their timeout,
        then the runs of dead workers; True if any."""
        if not self._reap_due or self._reap_from is None or now < self._reap_from:
            return False
        self._reap_due = False
        missed = timedelta(seconds=MISSED_BEATS * weft_settings.HEARTBEAT_INTERVAL)
        overdue = finish_overdue(now=now, silent_since=now - missed, changes=changes)
        if overdue:
            logger.warning("finished %d overdue run(s) of silent workers as lost", overdue)
        silent_since = now - timedelta(seconds=weft_settings.LOST_AFTER)
        lost = finish_lost(now=now, silent_since=silent_since, changes=changes)
        if lost:
            logger.warning("finished %d run(s) of dead workers as lost", lost)
        return overdue + lost > 0

    def out_of_reach(self) -> None:
        """A step could not reach the database: count the lost-after window again from
        the moment it can."""
        self._reap_from = None

    def deregister(self, now: datetime) -> None:
        if self.process is not None:
            WorkerProcess.objects.filter(pk=self.process.pk).update(stopped_at=now)
        self.let_go()

    def let_go(self) -> None:
        """Release the liveness lock (its connection closes): after deregistering, or
        when the process ends without reaching the database."""
        liveness, self.liveness = self.liveness, None
        if liveness is not None:
            liveness.stop()
            liveness.join(5)

    def _hear_quiet(self, quiet: bool) -> None:
        """Take the row's ``quiet`` as this worker's, saying so in the log when it changes."""
        if quiet == self.quiet:
            return
        self.quiet = quiet
        if quiet:
            logger.warning(
                "this worker (%s) was quieted: it claims no new runs and fires no schedules "
                "until resumed, and finishes the %d run(s) it holds",
                self.process,
                len(self.in_flight),
            )
        else:
            logger.warning("this worker (%s) was resumed: it claims runs again", self.process)

    def _fence(self, now: datetime) -> None:
        """Others declared this process dead: let go of its runs and register afresh."""
        assert self.process is not None
        dead = self.process
        runs = list(self.in_flight)
        logger.error(
            "this worker (%s) was declared dead by another: it missed its heartbeats for "
            "more than %ss. Its %d run(s) were finished as lost elsewhere; their outcomes "
            "will be discarded. Registering again as a new process.",
            dead,
            weft_settings.LOST_AFTER,
            len(runs),
        )
        for execution in runs:
            self.in_flight.give_up(execution, abort=True)
        self.register(now)
        logger.info("registered again as %s (was %s)", self.process, dead)

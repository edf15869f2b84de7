"""Helpers for a project's own tests and rehearsals: the driven clock.

``DrivenClock`` is a clock you move by hand. Build a :class:`~django_weft.engine.worker.Worker`
on it and call ``advance(timedelta(days=7))``: every schedule that comes due in that
week fires in time order, each at its own moment, and each run finishes before time
moves on. A week of schedule takes about as long as the runs themselves.

Used as ``runjobs --clock django_weft.testing.DrivenClock`` with no one to advance it,
the clock jumps straight to each next due time: a rehearsal that runs the schedule as
fast as the jobs allow, starting now.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from django_weft.timing.clocks import Clock, ClockPaused

if TYPE_CHECKING:
    from django_weft.engine.worker import Worker


class DrivenClock(Clock):
    """A clock that moves only when told to."""

    waits_for_runs = True

    def __init__(self, start: datetime | None = None) -> None:
        self._now = (start or datetime.now(UTC)).astimezone(UTC)
        self._until: datetime | None = None
        self._worker: Worker | None = None

    def now(self) -> datetime:
        return self._now

    def attach(self, worker: Worker) -> None:
        """The newest worker built on this clock is the one ``advance()`` drives."""
        self._worker = worker

    def sleep_until(self, moment: datetime | None, wake: threading.Event, longest: float) -> None:
        if self._until is None:
            # Nobody is advancing: a rehearsal, time jumps to whatever comes next.
            self._now = max(self._now, moment or self._now + timedelta(seconds=longest))
            return
        if moment is None or moment > self._until:
            self._now = self._until
            raise ClockPaused
        self._now = max(self._now, moment)

    def advance(self, delta: timedelta) -> None:
        """Move time forward by ``delta``, firing and running everything due on the way."""
        if delta < timedelta(0):
            raise ValueError(f"a driven clock only moves forward, not by {delta}")
        target = self._now + delta
        if self._worker is None:
            self._now = target
            return
        self._until = target
        try:
            self._worker.run_until_paused()
        finally:
            self._until = None
        self._now = target

    def skip(self, delta: timedelta) -> None:
        """Move time forward by ``delta`` without running anything, as if the process were down."""
        if delta < timedelta(0):
            raise ValueError(f"a driven clock only moves forward, not by {delta}")
        self._now += delta

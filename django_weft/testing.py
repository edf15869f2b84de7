"""Helpers for a project's own tests and rehearsals: the driven clock, and a rehearsal.

``DrivenClock`` is a clock that moves only when told to; on its own, ``advance()`` just
moves it. A :class:`Rehearsal` drives a :class:`~django_weft.engine.worker.loop.Worker` and
its driven clock together: ``rehearsal.advance(timedelta(days=7))`` fires every
schedule that comes due in that week in time order, each at its own moment, and each run
finishes before time moves on. A week of schedule takes about as long as the runs
themselves. While it lives the rehearsal's clock is the process's clock
(:func:`~django_weft.timing.clocks.install_clock`), so runs started by code, the admin or
the API in the meantime live on the rehearsal's time too.

Live views are published by a thread of each process, shortly after each commit: a test
that looks at what a socket or the channel layer received calls :func:`flush_live`
first (a rehearsal's ``advance()`` does it before it returns).

Used as ``runjobs --clock django_weft.testing.DrivenClock`` with no one to advance it,
the clock jumps straight to each next due time: a rehearsal that runs the schedule as
fast as the jobs allow, starting now.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

from django_weft.engine.worker.loop import Worker
from django_weft.live import publisher
from django_weft.timing import clocks
from django_weft.timing.clocks import Clock, ClockPaused


def _forward(delta: timedelta) -> timedelta:
    if delta < timedelta(0):
        raise ValueError(f"a driven clock only moves forward, not by {delta}")
    return delta


class DrivenClock(Clock):
    """A clock that moves only when told to."""

    waits_for_runs = True

    def __init__(self, start: datetime | None = None) -> None:
        self._now = (start or datetime.now(UTC)).astimezone(UTC)
        #: Where a sleep pauses (``ClockPaused``) while somebody drives the clock.
        self._until: datetime | None = None

    def now(self) -> datetime:
        return self._now

    def sleep_until(self, moment: datetime | None, wake: threading.Event, longest: float) -> None:
        if self._until is None:
            # Nobody is driving: a rehearsal at full speed, time jumps to what comes next.
            self._now = max(self._now, moment or self._now + timedelta(seconds=longest))
            return
        if moment is None or moment > self._until:
            self._now = self._until
            raise ClockPaused
        self._now = max(self._now, moment)

    def advance(self, delta: timedelta) -> None:
        """Move time forward by ``delta``; nothing runs (a :class:`Rehearsal` runs its
        worker through the time it advances)."""
        self._now += _forward(delta)

    def skip(self, delta: timedelta) -> None:
        """Move time forward by ``delta`` without running anything, as if the process were down."""
        self._now += _forward(delta)

    @contextmanager
    def pausing_at(self, moment: datetime) -> Iterator[None]:
        """While inside, a sleep moves time up to ``moment`` at most, then raises
        ``ClockPaused`` there; time is at ``moment`` after a block that did not raise."""
        self._until = moment
        try:
            yield
        finally:
            self._until = None
        self._now = max(self._now, moment)


def flush_live(timeout: float = 30.0) -> None:
    """Wait until every change committed so far in this process was published.

    Published means handed to the channel layer (or given up, the layer being down);
    the sockets then receive it as fast as the layer carries it. Raises
    ``TimeoutError`` if that took more than ``timeout`` seconds.
    """
    if not publisher.flush(timeout):
        raise TimeoutError(f"the live views' publisher did not catch up within {timeout}s")


class Rehearsal:
    """A worker on a driven clock, and the clock installed as the process's while it lives.

    ``Rehearsal(clock, **worker_options)`` builds ``Worker(clock=clock, **worker_options)``
    (a new :class:`DrivenClock` at the real now without ``clock``). Close it when done
    (``close()``, or use it as a context manager): that closes the worker and puts the
    process clock back as it was.
    """

    def __init__(self, clock: DrivenClock | None = None, **worker_options: Any) -> None:
        self.clock = clock or DrivenClock()
        self._options = worker_options
        self._previous = clocks.install_clock(self.clock)
        self._closed = False
        try:
            self.worker = Worker(clock=self.clock, **worker_options)
        except BaseException:
            clocks.install_clock(self._previous)
            raise

    def now(self) -> datetime:
        return self.clock.now()

    def advance(self, delta: timedelta) -> None:
        """Move time forward by ``delta``, firing and running everything due on the way.

        The worker does what is due, sleeps to the next due moment, and so on: each fire
        at its own moment, in time order, and each run finished before time moves on.
        ``advance(timedelta(0))`` does what is due now. Time ends exactly at the target,
        and what changed has been published to the live views (:func:`flush_live`).
        """
        target = self.clock.now() + _forward(delta)
        with self.clock.pausing_at(target):
            self.worker.run_until_paused()
        flush_live()

    def skip(self, delta: timedelta) -> None:
        """Move time forward by ``delta`` without running anything, as if the process were down."""
        self.clock.skip(delta)

    def restart(self, down: timedelta = timedelta(0), **worker_options: Any) -> Worker:
        """Close the worker, let ``down`` pass with no worker, and build a new one (with
        the same options, but for those given): a process restart."""
        self.worker.close()
        self.clock.skip(down)
        self._options = {**self._options, **worker_options}
        self.worker = Worker(clock=self.clock, **self._options)
        return self.worker

    def close(self) -> None:
        """Close the worker and put back the process clock installed before."""
        if self._closed:
            return
        self._closed = True
        try:
            self.worker.close()
        finally:
            clocks.install_clock(self._previous)

    def __enter__(self) -> Rehearsal:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

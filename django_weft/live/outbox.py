"""The publishing thread: changes handed over after commit, published in rounds.

A start, a claim or a finish must not wait for the channel layer (a ``group_send`` to
Redis from synchronous code costs milliseconds, a silent Redis seconds), so the code
that made a change only hands its ids to the process's :class:`Outbox` and goes on.
One thread per process takes what was handed over, waits :data:`COALESCE_WINDOW` for the
changes of the same moment to join, and delivers them as one round: a run changed five
times meanwhile is read and sent once, as it stands then. Changes handed over while a
round is out wait for the next one, which takes all of them, so a slow or failing layer
makes rounds bigger, never a queue that grows without end.

A round has a fixed cost (a query, a send to each group) beside what it costs per run,
and it is paid on the same interpreter as the starts, claims and finishes it publishes.
So under a steady stream of changes rounds begin at most every :data:`ROUND_INTERVAL`,
and what comes meanwhile joins the next one; the first change after a quiet spell still
goes out after :data:`COALESCE_WINDOW`.

The thread keeps one event loop for its whole life, so the channel layer's connections
(channels-redis keeps a pool per loop) are opened once, not for every message.

Nothing here knows what a round reads or sends: that is the ``deliver`` callable's
(:mod:`django_weft.live.publisher`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable

from django.db import connections

from django_weft.jobs.connections import drop_broken_connections

logger = logging.getLogger("django_weft.live")

#: How long the first change of a round waits for others (seconds): the changes of one
#: moment (a start and its claim, a run's state writes) are read and sent together.
COALESCE_WINDOW = 0.005
#: Rounds begin at most this often (seconds). Measured with channels-redis: a round of 7
#: runs (5 ms apart) cost 5 ms of the process's time, one of 57 runs (50 ms apart) 9 ms,
#: which took ``start()`` with a layer from 0.5 ms more than without to 0.1 ms more; a
#: watcher sees a busy run's changes 20 times a second.
ROUND_INTERVAL = 0.05
#: A thread with nothing to publish for this long closes its database connections,
#: which an idle web process would otherwise keep open beside its requests' ones.
IDLE_DISCONNECT = 10.0

#: What a round does with the runs and documents it took, on the outbox's thread and loop.
Deliver = Callable[[list[uuid.UUID], list[int], asyncio.AbstractEventLoop], None]


class Outbox:
    """Ids handed over from any thread, delivered in rounds by one thread of its own.

    The thread starts with the first hand-over, so a process that never publishes
    never has one. :meth:`flush` waits until what was handed over has been delivered
    (tests, and the process's exit), and rounds wait for no window or interval while it
    does; :meth:`stop` ends the thread. ``interval`` is :data:`ROUND_INTERVAL`.
    """

    def __init__(
        self, deliver: Deliver, *, name: str = "weft-publisher", interval: float = ROUND_INTERVAL
    ) -> None:
        self._deliver = deliver
        self._name = name
        self._interval = interval
        #: When the last round began (``time.monotonic()``), and callers in flush().
        self._round_began = -math.inf
        self._flushing = 0
        self._changed = threading.Condition()
        self._runs: dict[uuid.UUID, None] = {}
        self._documents: dict[int, None] = {}
        #: Hand-overs so far, and how many of them the rounds delivered (or gave up).
        self._handed = 0
        self._delivered = 0
        self._stopping = False
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        """Whether its thread runs: something was handed over since it last stopped."""
        return self._thread is not None

    def hand_over(self, run_ids: Iterable[uuid.UUID], document_ids: Iterable[int]) -> None:
        """Publish these runs and documents soon; returns at once."""
        with self._changed:
            self._runs.update(dict.fromkeys(run_ids))
            self._documents.update(dict.fromkeys(document_ids))
            self._handed += 1
            if self._thread is None:
                self._stopping = False
                self._start()
            self._changed.notify_all()

    def flush(self, timeout: float) -> bool:
        """Wait until every change handed over before this call was delivered.

        Delivered means sent, or given up (a layer that is down, a database that could
        not be read). False if ``timeout`` seconds passed first.
        """
        with self._changed:
            target = self._handed
            self._flushing += 1
            self._changed.notify_all()
            try:
                return self._changed.wait_for(lambda: self._delivered >= target, timeout)
            finally:
                self._flushing -= 1

    def stop(self, timeout: float) -> bool:
        """Deliver what is pending (for ``timeout`` seconds at most), then end the thread.

        What is handed over meanwhile is delivered too before the thread ends, which
        closes its database connections; a hand-over after that starts a new thread.
        False if the thread was still busy when ``timeout`` passed.
        """
        with self._changed:
            thread = self._thread
            self._stopping = True
            self._changed.notify_all()
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def forget_thread(self) -> None:
        """In a forked child: the parent's thread did not come along; start afresh."""
        self._changed = threading.Condition()
        self._thread = None
        self._stopping = False
        self._runs, self._documents = {}, {}
        self._handed = self._delivered = self._flushing = 0
        self._round_began = -math.inf

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
        self._thread.start()

    def _pending(self) -> bool:
        return bool(self._runs or self._documents)

    def _work(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            while self._next_round(loop):
                pass
        finally:
            loop.close()
            connections.close_all()

    def _next_round(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Wait for changes and deliver one round; False once the outbox is stopping."""
        with self._changed:
            if not self._changed.wait_for(
                lambda: self._pending() or self._stopping, IDLE_DISCONNECT
            ):
                connections.close_all()
                return True
            if self._stopping and not self._pending():
                self._thread = None
                return False
            # Wait for the changes of this moment, and keep rounds an interval apart;
            # stop() and flush() wait for neither.
            wait = max(COALESCE_WINDOW, self._round_began + self._interval - time.monotonic())
            self._changed.wait_for(lambda: self._stopping or self._flushing > 0, wait)
            self._round_began = time.monotonic()
            run_ids, document_ids = list(self._runs), list(self._documents)
            self._runs, self._documents = {}, {}
            handed = self._handed
        try:
            self._deliver(run_ids, document_ids, loop)
        except Exception:
            # deliver() gives up quietly on what it expects; anything else is a bug, and
            # the thread must live on for the next round.
            logger.exception("could not publish a change to the live views")
        finally:
            drop_broken_connections()
            with self._changed:
                self._delivered = handed
                self._changed.notify_all()
        return True


def after_fork(outbox: Outbox) -> None:
    """Make ``outbox`` start a thread of its own in a forked child that publishes."""
    os.register_at_fork(after_in_child=outbox.forget_thread)

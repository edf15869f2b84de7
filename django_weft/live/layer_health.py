"""Living through a channel-layer outage: say it once, wait it out, resynchronise.

Redis can restart or vanish under a running site. Everything durable is in the
database, so an outage loses messages, never data: publishers drop what they cannot
send, and sockets are told, wait, and take a fresh snapshot once the layer is back.

- :class:`LayerOutage` logs an outage once when it starts and once when it ends,
  however many calls it failed, for whoever uses the layer (publishing, sockets).
- :class:`LayerWatch` keeps the sockets of one event loop in step: one socket's layer
  error stands for all of them (they share the layer's connections, and a restarted
  Redis forgot every socket's groups, also those whose next call happens to work), so
  the watch tells them all, probes the layer with capped exponential back-off and
  jitter, and when a probe works tells them all to re-join their groups.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from django_weft.jobs.retries import exponential_delay

logger = logging.getLogger("django_weft.live")

#: The wait after the first failed probe, and the cap the waits double up to (each
#: spread by a quarter either way): a layer that is back is noticed within 5 seconds.
PROBE_BACKOFF = 0.1
PROBE_BACKOFF_CAP = 5.0
PROBE_JITTER = 0.25
#: Tries of one layer call before it counts as failed. A pooled connection that a
#: restarted Redis closed fails once (channels-redis's connections do not retry), and
#: the next try connects afresh.
LAYER_TRIES = 3
#: Sockets that re-join and re-read their snapshot per second after an outage, at most:
#: a thousand sockets spread over five seconds instead of hitting the database at once.
RESYNC_RATE = 200.0
#: The probe's group and channel: removing a channel from a group it is not in changes
#: nothing, and needs a working layer.
PROBE = ("weft.live.probe", "weft.live.probe")


class LayerOutage:
    """Whether the channel layer failed lately, as one kind of user of it sees it.

    ``failed()`` after a layer call raised, ``succeeded()`` after one worked, from any
    thread. The first failure of a streak is logged as a warning with the error, later
    ones at debug level, and the end of the streak once at info level: one outage, two
    lines, however many messages or sockets it hit.
    """

    def __init__(self, what: str) -> None:
        #: Who is hit, first in each log line: ``publishing``, ``live sockets``.
        self.what = what
        self._lock = threading.Lock()
        self._since: float | None = None
        self._failures = 0

    @property
    def ongoing(self) -> bool:
        return self._since is not None

    def failed(self, error: BaseException) -> None:
        with self._lock:
            first = self._since is None
            if first:
                self._since = time.monotonic()
            self._failures += 1
        if first:
            logger.warning(
                "%s: the channel layer failed (%s: %s); live views miss changes until it is back",
                self.what,
                type(error).__name__,
                str(error).strip() or "no message",
            )
        else:
            logger.debug("%s failed again (%s: %s)", self.what, type(error).__name__, error)

    def succeeded(self) -> None:
        with self._lock:
            if self._since is None:
                return
            lasted, failures = time.monotonic() - self._since, self._failures
            self._since, self._failures = None, 0
        logger.info(
            "%s: the channel layer works again after %.1fs (%d failed call%s)",
            self.what,
            lasted,
            failures,
            "" if failures == 1 else "s",
        )


#: The live sockets of this process.
sockets_outage = LayerOutage("live sockets")


def raise_if_cancelling() -> None:
    """Re-raise a cancellation that a layer call turned into another error.

    redis-py reports a read cancelled under it (a socket closing) as its own
    ``TimeoutError``: that is the socket ending, not the layer failing.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def layer_call(call: Callable[..., Awaitable[Any]], *args: Any) -> Exception | None:
    """Await ``call(*args)`` up to :data:`LAYER_TRIES` times; its last error, or None."""
    error: Exception | None = None
    for _ in range(LAYER_TRIES):
        try:
            await call(*args)
        except Exception as failure:
            raise_if_cancelling()
            error = failure
        else:
            return None
    return error


class Watcher(Protocol):
    """A socket a :class:`LayerWatch` keeps in step."""

    def layer_down(self) -> None:
        """The layer failed: changes stop reaching this socket."""

    def layer_back(self, delay: float) -> None:
        """The layer works again: re-join the groups and resend the snapshot in ``delay`` s."""


class LayerWatch:
    """The channel layer's health as the sockets of one event loop see it."""

    def __init__(self, layer: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.layer = layer
        self.loop = loop
        self.sockets: set[Watcher] = set()
        #: Set while the layer works; layer calls of sockets wait on it during an outage.
        self.back = asyncio.Event()
        self.back.set()
        self._probe: asyncio.Task[None] | None = None

    @property
    def down(self) -> bool:
        return not self.back.is_set()

    def follow(self, socket: Watcher) -> None:
        self.sockets.add(socket)

    def unfollow(self, socket: Watcher) -> None:
        self.sockets.discard(socket)
        self._forget_if_idle()

    def lost(self, error: BaseException) -> None:
        """A layer call of one socket failed: every socket is told, and probing starts."""
        sockets_outage.failed(error)
        if self.down:
            return
        self.back.clear()
        for socket in list(self.sockets):
            socket.layer_down()
        self._probe = self.loop.create_task(self._probe_until_back())

    async def _probe_until_back(self) -> None:
        try:
            failures = 0
            while (error := await layer_call(self.layer.group_discard, *PROBE)) is not None:
                sockets_outage.failed(error)
                failures += 1
                await asyncio.sleep(
                    exponential_delay(failures, PROBE_BACKOFF, 2.0, PROBE_BACKOFF_CAP, PROBE_JITTER)
                )
            sockets_outage.succeeded()
            self.back.set()
            spread = min(PROBE_BACKOFF_CAP, len(self.sockets) / RESYNC_RATE)
            for socket in list(self.sockets):
                socket.layer_back(random.uniform(0, spread))
        finally:
            self._probe = None
            self._forget_if_idle()

    def _forget_if_idle(self) -> None:
        if not self.sockets and self._probe is None and _watches.get(self.loop) is self:
            del _watches[self.loop]


_watches: dict[asyncio.AbstractEventLoop, LayerWatch] = {}


def watch_of(layer: Any) -> LayerWatch:
    """The watch over ``layer`` for the sockets of the running event loop."""
    loop = asyncio.get_running_loop()
    found = _watches.get(loop)
    if found is None or found.layer is not layer:
        found = _watches[loop] = LayerWatch(layer, loop)
    return found

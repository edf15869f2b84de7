"""Where the worker's next round looks: everywhere, or only where work may be.

A full look (every step, every query) comes once per poll interval, after a wake-up the
worker cannot place, and in every round on a driven clock (tests change rows between two
advances, and what they see must not depend on real time). In between a round fires only
when a fire is due or the last round fired, and claims only when the last claim filled
every free slot, a NOTIFY announced runs, a retry came due, or a rate limit's next slot
came: a worker busy with runs
does not query for schedules at every run that ends.

The LISTEN glue lands here too: a NOTIFY (on the listener's thread) says where to look
(new runs, changed schedules) or which run was aborted, and wakes the loop.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime

from django_weft.engine.worker.inflight import InFlight


def _due(moment: datetime | None, now: datetime) -> bool:
    return moment is not None and moment <= now


class Lookout:
    """What the last rounds and NOTIFYs said about where work may be."""

    def __init__(self, poll_interval: float, wake: threading.Event, in_flight: InFlight) -> None:
        self.poll_interval = poll_interval
        self._wake = wake
        self._in_flight = in_flight
        self._look_everywhere = True
        self._looked_at = float("-inf")
        #: Whether the last fire step fired (more may be due), a NOTIFY said schedules
        #: changed.
        self.more_to_fire = True
        #: Whether the last claim filled every free slot, a finish or a fire may have
        #: queued runs, or a NOTIFY announced some. Run threads read it too: while it
        #: holds, a thread that ended its run claims the next one itself.
        self.more_to_claim = True
        #: The next due fire and the next retry, as the last looks read them.
        self.next_fire: datetime | None = None
        self.next_retry: datetime | None = None
        #: When a full rate limit next lets a run it holds begin, as the last claim
        #: read it (see :func:`~django_weft.engine.runs.claiming.claim`).
        self.next_slot: datetime | None = None

    def everywhere(self, *, driven: bool) -> bool:
        """Whether the next round is a full look."""
        return (
            self._look_everywhere
            or driven
            or time.monotonic() - self._looked_at >= self.poll_interval
        )

    def looked_everywhere(self) -> None:
        self._look_everywhere, self._looked_at = False, time.monotonic()

    def fire(self, now: datetime) -> bool:
        """Whether a round that is not a full look fires."""
        return self.more_to_fire or _due(self.next_fire, now)

    def claim(self, now: datetime) -> bool:
        """Whether a round that is not a full look claims."""
        return self.more_to_claim or self.retry_due(now) or _due(self.next_slot, now)

    def retry_due(self, now: datetime) -> bool:
        return _due(self.next_retry, now)

    def slot_at(self, moment: datetime) -> None:
        """A claim found a rate limit full until ``moment``."""
        self.next_slot = moment

    def retry_at(self, moment: datetime) -> None:
        """A finish queued a retry at ``moment``."""
        self.next_retry = min(filter(None, (self.next_retry, moment)))

    def on_notify(self, payload: str) -> None:
        """A NOTIFY's payload (``runs``, ``schedules``, ``abort:<run id>``, or else)."""
        kind, _, run_id = payload.partition(":")
        if kind == "abort":
            self._in_flight.abort(run_id)
            return
        if kind == "runs":
            self.more_to_claim = True
        elif kind == "schedules":
            self.more_to_fire = True
        else:
            self._look_everywhere = True
        self._wake.set()

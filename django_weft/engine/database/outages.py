"""How a worker lives through a database outage: drop what broke, back off, say it once.

Every step of the worker loop runs inside the boundary that :class:`Outage` keeps: a
step that raises is not retried at once but after a capped exponential back-off with
jitter, the broken connections are closed so the next step connects afresh, and the
operator reads one line when the trouble starts and one when it ends, not one per
attempt.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from django.db import DatabaseError, InterfaceError, OperationalError

from django_weft.jobs.connections import drop_broken_connections, note_outage
from django_weft.jobs.retries import exponential_delay
from django_weft.live.changes import Changes
from django_weft.signals import outage_ended, outage_started

#: The back-off after the first failure, and its cap: a restarted server is used again
#: within about two seconds of accepting connections.
BACKOFF_INITIAL = 0.05
BACKOFF_CAP = 2.0
BACKOFF_JITTER = 0.25

#: A step of the worker loop: handed the moment and the changes to note what it wrote
#: (published when it ends), it does its work and says whether it did any.
Step = Callable[[datetime, Changes], object]
#: A step's answer when it raised: the round stops there, the loop backs off.
FAILED = object()


#: SQLSTATEs of a statement that gave up waiting (``lock_not_available`` past
#: ``WEFT_LOCK_TIMEOUT``, ``query_canceled`` past ``WEFT_STATEMENT_TIMEOUT``): the
#: connection is fine, the row or the moment was not.
GAVE_UP_WAITING = frozenset({"55P03", "57014"})


def is_database_error(error: BaseException) -> bool:
    """Whether ``error`` says the database (or the way to it) failed, not the code."""
    return isinstance(error, DatabaseError)


def is_outage(error: BaseException) -> bool:
    """Whether ``error``, or an error it was raised from or while handling, says the
    database could not do its part: connection lost, server gone, disk full, a timeout.

    Those are ``OperationalError`` and ``InterfaceError``; an ``IntegrityError``, a
    ``ProgrammingError`` or a ``DataError`` is the code's own mistake, and so is
    anything else. The chain is followed because code that catches a database error
    and raises its own (``raise SaveFailed from error``) did not cause the outage.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, OperationalError | InterfaceError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def gave_up_waiting(error: BaseException) -> bool:
    """Whether ``error`` is a statement that stopped waiting (see :data:`GAVE_UP_WAITING`)."""
    cause = error.__cause__
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return code in GAVE_UP_WAITING


class Outage:
    """The trouble a loop is in: since when, how often it failed, when to try again.

    ``failed()`` after a step raised, ``succeeded()`` after one worked. The first failure
    of a streak is logged as a warning with the error, later ones at debug level, and the
    end of the streak once at info level with how long it lasted; the same two moments
    send ``outage_started`` and ``outage_ended`` (:mod:`django_weft.signals`).
    """

    def __init__(
        self,
        logger: logging.Logger,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self._monotonic = monotonic
        self.since: float | None = None
        self.failures = 0
        self.retry_at = 0.0

    @property
    def ongoing(self) -> bool:
        return self.since is not None

    def wait(self) -> float:
        """Seconds until the next attempt is due (0 when it may happen now)."""
        return max(0.0, self.retry_at - self._monotonic())

    def failed(self, step: str, error: BaseException) -> float:
        """Record a failed step; returns the seconds to back off."""
        now = self._monotonic()
        self.failures += 1
        if self.since is None:
            self.since = now
            if is_database_error(error):
                self.logger.warning(
                    "database error in the %s step (%s: %s); backing off and retrying",
                    step,
                    type(error).__name__,
                    str(error).strip() or "no message",
                )
            else:
                self.logger.error("%s failed; backing off and retrying", step, exc_info=error)
            outage_started.send_robust(sender=Outage, step=step, error=error)
        else:
            self.logger.debug("%s failed again (%s: %s)", step, type(error).__name__, error)
        drop_broken_connections()
        if is_database_error(error):
            note_outage()
        delay = exponential_delay(self.failures, BACKOFF_INITIAL, 2.0, BACKOFF_CAP, BACKOFF_JITTER)
        self.retry_at = now + delay
        return delay

    def succeeded(self) -> bool:
        """Record a step that worked; True when it ended an outage."""
        if self.since is None:
            return False
        lasted = self._monotonic() - self.since
        self.logger.info(
            "database available again after %.1fs (%d failed attempt%s)",
            lasted,
            self.failures,
            "" if self.failures == 1 else "s",
        )
        failures = self.failures
        self.since, self.failures, self.retry_at = None, 0, 0.0
        outage_ended.send_robust(sender=Outage, seconds=lasted, failures=failures)
        return True

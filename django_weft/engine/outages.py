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

from django.db import DatabaseError, connections

from django_weft.jobs.retries import exponential_delay

#: The back-off after the first failure, and its cap: a restarted server is used again
#: within about two seconds of accepting connections.
BACKOFF_INITIAL = 0.05
BACKOFF_CAP = 2.0
BACKOFF_JITTER = 0.25


def drop_broken_connections() -> None:
    """Close this thread's connections that broke or expired; keep healthy ones for ever.

    A worker is one long request: Django's ``close_old_connections()`` would honour
    ``CONN_MAX_AGE = 0`` and connect again for every step and every run. Here a
    connection is closed only after a database error made it unusable, or when a positive
    ``CONN_MAX_AGE`` says it is too old.
    """
    for connection in connections.all(initialized_only=True):
        if connection.connection is None or connection.in_atomic_block:
            continue
        max_age = connection.settings_dict.get("CONN_MAX_AGE")
        expired = (
            bool(max_age)
            and connection.close_at is not None
            and time.monotonic() >= connection.close_at
        )
        if connection.errors_occurred:
            usable = _is_usable(connection)
            connection.errors_occurred = False
            if not usable:
                _close(connection)
                continue
        if expired:
            _close(connection)


def _is_usable(connection: object) -> bool:
    try:
        return bool(connection.is_usable())  # type: ignore[attr-defined]
    except Exception:
        return False


def _close(connection: object) -> None:
    # Closing a connection the server already dropped raises on some drivers: it is
    # gone either way, and the next query connects again.
    try:
        connection.close()  # type: ignore[attr-defined]
    except Exception:
        connection.connection = None  # type: ignore[attr-defined]


def is_database_error(error: BaseException) -> bool:
    """Whether ``error`` says the database (or the way to it) failed, not the code."""
    return isinstance(error, DatabaseError)


class Outage:
    """The trouble a loop is in: since when, how often it failed, when to try again.

    ``failed()`` after a step raised, ``succeeded()`` after one worked. The first failure
    of a streak is logged as a warning with the error, later ones at debug level, and the
    end of the streak once at info level with how long it lasted.
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
        else:
            self.logger.debug("%s failed again (%s: %s)", step, type(error).__name__, error)
        drop_broken_connections()
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
        self.since, self.failures, self.retry_at = None, 0, 0.0
        return True

"""Database connections of a long-lived process: kept, or dropped once broken.

A worker is one long request, and each of its run threads another: Django's
``close_old_connections()`` would honour ``CONN_MAX_AGE = 0`` and connect again for every
step and every run. :func:`drop_broken_connections` closes a connection only after a
database error made it unusable, or when a positive ``CONN_MAX_AGE`` says it is too old.

It sits here, beside the run context, because a running job's abort polls call it as much
as the worker loop and its run threads do (``engine.outages``, ``engine.executors``).

On PostgreSQL the worker loop's sessions also get ``WEFT_STATEMENT_TIMEOUT`` and
``WEFT_LOCK_TIMEOUT`` (:class:`StatementLimits`), so that no statement of the loop waits
for ever behind a row someone else locked; jobs' own statements (their threads) keep the
server's settings.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from django_weft.conf import weft_settings


def session_limits() -> list[tuple[str, str]]:
    """The worker's timeouts as PostgreSQL settings and values (milliseconds), if set."""
    limits = (
        ("statement_timeout", weft_settings.STATEMENT_TIMEOUT),
        ("lock_timeout", weft_settings.LOCK_TIMEOUT),
    )
    return [(name, str(round(seconds * 1000))) for name, seconds in limits if seconds is not None]


def limit_session(cursor: Any, extra: list[tuple[str, str]] | None = None) -> None:
    """Apply :func:`session_limits` (and ``extra`` settings) to ``cursor``'s session.

    ``set_config(..., false)`` rather than ``SET``: it takes parameters, and it lasts for
    the session, so it is done once per connection.
    """
    settings = [*session_limits(), *(extra or [])]
    if settings:
        calls = ", ".join(["set_config(%s, %s, false)"] * len(settings))
        cursor.execute(f"SELECT {calls}", [value for pair in settings for value in pair])


class StatementLimits:
    """The worker's timeouts on every PostgreSQL connection its loop's thread opens.

    Django connects lazily, and again after an outage dropped a connection: the
    ``connection_created`` signal is where each new session of that thread is limited.
    Other threads (the jobs' runs) are left alone.
    """

    def __init__(self) -> None:
        self._thread: int | None = None

    def install(self) -> None:
        """Limit the calling thread's sessions, the one open now and those to come."""
        self._thread = threading.get_ident()
        connection_created.connect(self._created, dispatch_uid=self._uid(), weak=False)
        for connection in connections.all(initialized_only=True):
            if connection.connection is not None:
                self._limit(connection)

    def uninstall(self) -> None:
        connection_created.disconnect(dispatch_uid=self._uid())

    def _uid(self) -> str:
        return f"django_weft.statement_limits.{id(self)}"

    def _created(self, sender: object, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
        if threading.get_ident() == self._thread:
            self._limit(connection)

    @staticmethod
    def _limit(connection: BaseDatabaseWrapper) -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                limit_session(cursor)


def drop_broken_connections() -> None:
    """Close this thread's connections that broke or expired; keep healthy ones for ever."""
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


#: How many database outages this process has seen: a run thread whose connections were
#: last checked before the latest one checks them again (:func:`check_after_outage`).
_outages_seen = 0
_checked = threading.local()


def note_outage() -> None:
    """Mark every thread's connections suspect: the database failed a step of this
    process, so a connection that sat idle meanwhile may be dead without knowing it."""
    global _outages_seen
    _outages_seen += 1


def check_after_outage() -> None:
    """Drop this thread's dead connections (:func:`drop_dead_connections`) if an outage
    was noted since it last looked; nothing otherwise, so a busy thread pays nothing."""
    if getattr(_checked, "outages", 0) != _outages_seen:
        _checked.outages = _outages_seen
        drop_dead_connections()


def drop_dead_connections() -> None:
    """Close this thread's connections that died while they sat idle, unseen.

    A connection that sat unused while the database restarted (or a proxy dropped it)
    raised nothing yet, so :func:`drop_broken_connections` keeps it, and the next job's
    first query would fail. Each is asked once (``SELECT 1`` on PostgreSQL).
    """
    for connection in connections.all(initialized_only=True):
        if connection.connection is None or connection.in_atomic_block:
            continue
        if not _is_usable(connection):
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

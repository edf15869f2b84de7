"""Database connections of a long-lived process: kept, or dropped once broken.

A worker is one long request, and each of its run threads another: Django's
``close_old_connections()`` would honour ``CONN_MAX_AGE = 0`` and connect again for every
step and every run. :func:`drop_broken_connections` closes a connection only after a
database error made it unusable, or when a positive ``CONN_MAX_AGE`` says it is too old.

It sits here, beside the run context, because a running job's abort polls call it as much
as the worker loop and its run threads do (``engine.outages``, ``engine.executors``).
"""

from __future__ import annotations

import time

from django.db import connections


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

"""Liveness on PostgreSQL: a session advisory lock that only the worker's end releases.

A heartbeat is a statement, and a statement can wait: behind a row someone locked, for a
connection slot, for a job that holds the GIL. So on PostgreSQL each ``runjobs`` process
also holds a session-level advisory lock keyed by its worker row's id
(:func:`lock_key`), on a connection of its own, opened from the settings of
``WEFT_LIVENESS_DATABASE`` and kept by a thread of its own (:class:`LivenessLock`). The
server releases the lock when that session ends: when the process exits or is killed
(the kernel closes its socket), or when the server's TCP keepalives, set on the session
(:mod:`~django_weft.engine.database.keepalives`), give up on a host that vanished.
Reapers read the held locks from ``pg_locks`` in the statement that marks workers stopped
(:mod:`~django_weft.engine.worker.reaping`): a worker that holds its lock is alive, however
long its heartbeat is silent.

A database restart drops every lock: live workers' threads connect again and take theirs
back within a few seconds, and reapers wait until the server has been up for
``WEFT_LOST_AFTER`` seconds before they believe a lock's absence.
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from typing import Any

from django.db import connections

from django_weft.conf import weft_settings
from django_weft.engine.database.keepalives import keepalives
from django_weft.engine.database.outages import Outage
from django_weft.jobs.connections import limit_session

logger = logging.getLogger("django_weft.worker")


def lock_key(worker_id: uuid.UUID) -> int:
    """The advisory lock key of worker ``worker_id``: its id's first 64 bits, signed."""
    return int.from_bytes(worker_id.bytes[:8], "big", signed=True)


def key_sql(column: str) -> str:
    """:func:`lock_key` of the uuid column ``column``, in SQL."""
    return f"('x' || left(replace({column}::text, '-', ''), 16))::bit(64)::bigint"


#: The keys of the advisory locks held in this database, as :func:`lock_key` makes them:
#: ``pg_locks`` shows a bigint key's halves in ``classid`` and ``objid``, with
#: ``objsubid`` 1.
HELD_KEYS_SQL = (
    "SELECT (l.classid::bigint << 32) | l.objid::bigint FROM pg_locks l "
    "WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def uses_liveness_lock() -> bool:
    """Whether workers prove they are alive by the lock (PostgreSQL, not switched off)."""
    alias = weft_settings.LIVENESS_DATABASE
    return alias is not None and connections[alias].vendor == "postgresql"


class LivenessLock(threading.Thread):
    """A daemon thread that holds the liveness lock of this process's worker row.

    :meth:`hold` names the row (again after a fence); the thread takes the lock on its
    own connection, looks every heartbeat interval whether the connection still works,
    and connects again (backing off as the loop does) after a restart or a dropped
    connection. The connection is a plain driver connection, never Django's: no
    connection pool, no transaction, nothing else ever runs on it.
    """

    def __init__(self, alias: str) -> None:
        super().__init__(name="weft-liveness", daemon=True)
        wrapper = connections[alias]
        self._connect = wrapper.Database.connect  # type: ignore[attr-defined]
        self._params = wrapper.get_connection_params()
        self._stop_event = threading.Event()
        self._changed = threading.Event()
        self._key: int | None = None

    def hold(self, worker_id: uuid.UUID) -> None:
        """Hold the lock of worker row ``worker_id`` from now on, letting go of the last."""
        self._key = lock_key(worker_id)
        self._changed.set()

    def stop(self) -> None:
        """Let go of the lock and end the thread (its connection closes)."""
        self._stop_event.set()
        self._changed.set()

    def run(self) -> None:
        outage = Outage(logger)
        while not self._stop_event.is_set():
            try:
                self._keep(outage)
            except Exception as error:
                outage.failed("liveness lock", error)
                self._stop_event.wait(outage.wait())

    def _keep(self, outage: Outage) -> None:
        """Connect, then hold the wanted lock until stopped or the connection breaks."""
        client, server = keepalives(weft_settings.LOST_AFTER)
        raw: Any = self._connect(
            **{
                **self._params,
                "autocommit": True,
                "connect_timeout": max(1, math.ceil(weft_settings.HEARTBEAT_INTERVAL * 2)),
                # Keepalives on this side too: a server that vanished breaks the
                # connection instead of hanging the next look at it.
                **client,
            }
        )
        try:
            with raw.cursor() as cursor:
                limit_session(cursor, server)
                held: int | None = None
                while not self._stop_event.is_set():
                    self._changed.clear()
                    wanted = self._key
                    if wanted != held:
                        held = self._take(cursor, held, wanted)
                        if held is not None:
                            outage.succeeded()
                    else:
                        cursor.execute("SELECT 1")
                    self._changed.wait(weft_settings.HEARTBEAT_INTERVAL)
        finally:
            raw.close()

    def _take(self, cursor: Any, held: int | None, wanted: int | None) -> int | None:
        """Let go of ``held``, take ``wanted``; the key now held (None: not taken yet)."""
        if held is not None:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [held])
        if wanted is None:
            return None
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [wanted])
        if not cursor.fetchone()[0]:
            # The session this process lost (a network blip) may linger on the server
            # until it notices; it holds the lock meanwhile, which keeps this worker alive.
            logger.debug("liveness lock %s is still held by an older session", wanted)
            return None
        return wanted

"""PostgreSQL LISTEN/NOTIFY: wake a sleeping worker the moment something changes.

Triggers installed by migration 0002 (PostgreSQL only) notify channel ``django_weft``
when schedules change (any write: admin, API, ORM, bulk update or raw SQL), when a run
is started, and when an abort is requested (payload ``abort:<run id>``). Elsewhere the
worker polls every ``WEFT_POLL_INTERVAL`` seconds instead.

LISTEN needs a session of its own: through a proxy in transaction pooling (PgBouncer's
``pool_mode = transaction``) the server session that ran it goes back to the pool, and
notifications reach whoever holds it next, or nobody. So the listener connects with the
settings of ``WEFT_LISTEN_DATABASE``, an alias that may reach the same database directly
while the loop's statements go through the pool. A NOTIFY is sent at the commit of the
transaction that made it, whichever connection that was, to every session listening on
that database: the listener must reach the workers' database itself, which it checks
(:data:`IDENTITY_SQL`) before it listens.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections

from django_weft.conf import weft_settings
from django_weft.engine.database.keepalives import keepalives
from django_weft.engine.database.outages import Outage
from django_weft.jobs.connections import limit_session

logger = logging.getLogger("django_weft.notify")

CHANNEL = "django_weft"
#: How often the listener looks whether it was stopped, in seconds: what a worker's close
#: waits for it at most.
STOP_CHECK = 0.1
#: What a session reads to tell which database it reached, as the server sees it (a
#: proxy in between changes neither): the database's name and the cluster's identifier.
IDENTITY_SQL = "SELECT current_database(), system_identifier::text FROM pg_control_system()"


def listen_alias() -> str | None:
    """The alias the worker LISTENs through, or None where it polls.

    ``WEFT_LISTEN_DATABASE``, when the workers' database and that alias are PostgreSQL.
    """
    alias = weft_settings.LISTEN_DATABASE
    if alias is None or connection.vendor != "postgresql":
        return None
    return alias if connections[alias].vendor == "postgresql" else None


class Listener(threading.Thread):
    """A daemon thread holding its own connection, LISTENing on ``django_weft``.

    The connection is opened from the settings of database ``alias`` (see
    :func:`listen_alias`). When that is not the workers' own alias, each new connection
    first compares the database it reached with the one the workers' alias reaches; on
    a mismatch it logs an error and the thread ends (the workers poll).
    """

    def __init__(self, alias: str, on_notify: Callable[[str], None]) -> None:
        super().__init__(name="weft-listen", daemon=True)
        self.alias = alias
        self.on_notify = on_notify
        self._stop_event = threading.Event()
        wrapper = connections[alias]
        self._connect = wrapper.get_new_connection
        self._params = wrapper.get_connection_params()
        self.ready = threading.Event()

    def run(self) -> None:
        outage = Outage(logger)
        while not self._stop_event.is_set():
            try:
                if not self._listen(outage):
                    return
            except Exception as error:
                outage.failed("LISTEN", error)
                self._stop_event.wait(outage.wait())

    def _listen(self, outage: Outage) -> bool:
        """Listen until stopped or the connection breaks; False if it reached the wrong
        database."""
        # The liveness lock's keepalives: a server that vanished, or a network cut, ends
        # in a reconnect (and a full look) instead of a listener that hears nothing.
        client, server = keepalives(weft_settings.LOST_AFTER)
        raw = self._connect({**self._params, **client})
        try:
            raw.autocommit = True
            with raw.cursor() as cursor:
                limit_session(cursor, server)
            if self.alias != DEFAULT_DB_ALIAS and not self._same_database(raw):
                return False
            raw.execute(f"LISTEN {CHANNEL}")
            if outage.succeeded():
                # What was notified while nobody listened is lost: look at the database.
                self.on_notify("")
            if not self.ready.is_set():
                logger.info("listening for wake-ups on database %r", self.alias)
                self.ready.set()
            while not self._stop_event.is_set():
                for notice in raw.notifies(timeout=STOP_CHECK):
                    self.on_notify(notice.payload)
        finally:
            raw.close()
        return True

    def _same_database(self, raw: Any) -> bool:
        """Whether ``raw`` reached the database the workers' alias reaches; logged if not.

        The workers' side is read on a connection of this thread's own, closed at once:
        through a pool, that is one short transaction.
        """
        listening = tuple(raw.execute(IDENTITY_SQL).fetchone())
        workers = connections[DEFAULT_DB_ALIAS]
        try:
            with workers.cursor() as cursor:
                cursor.execute(IDENTITY_SQL)
                working = tuple(cursor.fetchone())
        finally:
            workers.close()
        if listening == working:
            return True
        logger.error(
            "WEFT_LISTEN_DATABASE = %r reaches database %r of cluster %s, not the workers' "
            "database %r of cluster %s (DATABASES[%r]): its notifications would never be "
            "heard. Not listening; workers poll every WEFT_POLL_INTERVAL seconds.",
            self.alias,
            *listening,
            *working,
            DEFAULT_DB_ALIAS,
        )
        return False

    def stop(self) -> None:
        self._stop_event.set()

"""PostgreSQL LISTEN/NOTIFY: wake a sleeping worker the moment something changes.

Triggers installed by migration 0002 (PostgreSQL only) notify channel ``django_weft``
when schedules change (any write: admin, API, ORM, bulk update or raw SQL), when a run
is started, and when an abort is requested (payload ``abort:<run id>``). Elsewhere the
worker polls every ``WEFT_POLL_INTERVAL`` seconds instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import connection

from django_weft.engine.outages import Outage

logger = logging.getLogger("django_weft.notify")

CHANNEL = "django_weft"
#: How often the listener looks whether it was stopped, in seconds: what a worker's close
#: waits for it at most.
STOP_CHECK = 0.1


def can_listen() -> bool:
    return connection.vendor == "postgresql"


class Listener(threading.Thread):
    """A daemon thread holding its own connection, LISTENing on ``django_weft``."""

    def __init__(self, on_notify: Callable[[str], None]) -> None:
        super().__init__(name="weft-listen", daemon=True)
        self.on_notify = on_notify
        self._stop_event = threading.Event()
        self._params = connection.get_connection_params()
        self.ready = threading.Event()

    def run(self) -> None:
        outage = Outage(logger)
        while not self._stop_event.is_set():
            try:
                self._listen(outage)
            except Exception as error:
                outage.failed("LISTEN", error)
                self._stop_event.wait(outage.wait())

    def _listen(self, outage: Outage) -> None:
        raw = connection.get_new_connection(self._params)
        try:
            raw.autocommit = True
            raw.execute(f"LISTEN {CHANNEL}")
            if outage.succeeded():
                # What was notified while nobody listened is lost: look at the database.
                self.on_notify("")
            self.ready.set()
            while not self._stop_event.is_set():
                for notice in raw.notifies(timeout=STOP_CHECK):
                    self.on_notify(notice.payload)
        finally:
            raw.close()

    def stop(self) -> None:
        self._stop_event.set()

"""What the health views check: can this process serve (readiness), is it alive (liveness).

Readiness asks the services: every database in ``DATABASES`` answers ``SELECT 1``, the
default database has every migration applied, the default channel layer takes a call.
Liveness asks only the process itself: a web process that answers is alive; a
``runjobs`` process (serving ``--http``) is alive while its worker loop turns, within
``WEFT_HEALTH_LOOP_STALE`` seconds. A database outage makes a process unready, never
dead: restarting it would not bring the database back (docs/deployment.md).

Each check says ``ok`` and, when it is not, a short reason naming the kind of error,
never its message: the views answer without authentication, and an error's message can
name hosts and users. For the same reason no check may cost much more than the probe's
request: anyone can send probes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Count, Max

from django_weft.conf import weft_settings
from django_weft.engine.worker.housekeeping import loop_pulse
from django_weft.live.layer_health import PROBE


@dataclass(frozen=True)
class Check:
    """One check's answer."""

    ok: bool
    detail: str = ""

    def as_json(self) -> dict[str, object]:
        return {"ok": self.ok, **({"detail": self.detail} if self.detail else {})}


#: The aliases whose migrations were all applied once: they stay applied, so the
#: migration graph (every migration file of every app) is read until then, not after.
_migrated: set[str] = set()

#: What ``django_migrations`` held (:func:`applied_rows`): no table, or its row count and
#: highest id, which every ``migrate`` (forwards, backwards or ``--fake``) changes.
AppliedRows = tuple[int, int | None] | None

#: Per alias not migrated yet: the applied rows when its migration graph was last read,
#: and the answer then. While the rows stay the same so does the answer, so a probe
#: reads the graph (every migration file of every app: tens of milliseconds of CPU)
#: once per change of the rows, not once per request.
_unmigrated: dict[str, tuple[AppliedRows, Check]] = {}


def database(alias: str) -> Check:
    """Whether the database ``alias`` answers a query."""
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as error:
        # A broken connection is dropped, so the next probe connects afresh.
        connections[alias].close_if_unusable_or_obsolete()
        return Check(False, f"unreachable ({type(error).__name__})")
    return Check(True)


def applied_rows(connection: BaseDatabaseWrapper) -> AppliedRows:
    """What ``connection``'s ``django_migrations`` holds, in two cheap queries: None
    without the table, else its row count and highest id."""
    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return None
    found = recorder.migration_qs.aggregate(rows=Count("id"), last=Max("id"))
    return found["rows"], found["last"]


def migrations(alias: str = DEFAULT_DB_ALIAS) -> Check:
    """Whether every migration of every installed app is applied on ``alias``.

    The migration graph is read again only when the applied migrations changed since it
    was last read (see :data:`_unmigrated`); once all are applied, never.
    """
    if alias in _migrated:
        return Check(True)
    connection = connections[alias]
    try:
        applied = applied_rows(connection)
        remembered = _unmigrated.get(alias)
        if remembered is not None and remembered[0] == applied:
            return remembered[1]
        executor = MigrationExecutor(connection)
        unapplied = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        return Check(False, f"cannot read the applied migrations ({type(error).__name__})")
    if unapplied:
        answer = Check(False, f"{len(unapplied)} migration(s) not applied; run manage.py migrate")
        _unmigrated[alias] = (applied, answer)
        return answer
    _migrated.add(alias)
    _unmigrated.pop(alias, None)
    return Check(True)


def channel_layer() -> Check:
    """Whether the default channel layer takes a call within ``WEFT_HEALTH_TIMEOUT``.

    A project without ``CHANNEL_LAYERS`` has no live views to serve, which is fine.
    """
    layer = get_channel_layer()
    if layer is None:
        return Check(True, "no channel layer configured")

    async def probe() -> None:
        await asyncio.wait_for(layer.group_discard(*PROBE), weft_settings.HEALTH_TIMEOUT)

    try:
        async_to_sync(probe)()
    except TimeoutError:
        return Check(False, f"no answer within {weft_settings.HEALTH_TIMEOUT:g}s")
    except Exception as error:
        return Check(False, f"unreachable ({type(error).__name__})")
    return Check(True)


def worker_loop() -> Check | None:
    """Whether this process's worker loop turned lately; None in a process without one."""
    since = loop_pulse.since_last_beat()
    if since is None:
        return None
    stale = weft_settings.HEALTH_LOOP_STALE
    if since > stale:
        return Check(False, f"the worker loop has not turned for {since:.0f}s (limit {stale:g}s)")
    return Check(True)


def readiness() -> dict[str, Check]:
    """Every readiness check by name: ``database:<alias>``, ``migrations``,
    ``channel_layer``."""
    checks = {f"database:{alias}": database(alias) for alias in settings.DATABASES}
    if checks[f"database:{DEFAULT_DB_ALIAS}"].ok:
        checks["migrations"] = migrations()
    else:
        checks["migrations"] = Check(False, "the default database is unreachable")
    checks["channel_layer"] = channel_layer()
    return checks


def liveness() -> dict[str, Check]:
    """Every liveness check by name: ``worker_loop`` in a ``runjobs`` process, else none."""
    loop = worker_loop()
    return {} if loop is None else {"worker_loop": loop}

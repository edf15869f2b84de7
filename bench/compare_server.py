"""The PostgreSQL side of ``compare.py``: its databases, its lock, the commit ceiling.

Every system gets a database of its own, ``weft_compare_<system>``, created at the
start and dropped at the end (``bench/_setup.py``'s ``weft_bench`` is never touched).
An advisory lock held on the administrative connection for the whole run keeps a
second ``compare.py`` on the same server from dropping the first one's databases, and
lets a run drop what a killed run left behind.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import _setup
import psycopg
from psycopg import errors

PREFIX = "weft_compare_"
#: The key of the advisory lock that one ``compare.py`` per server holds.
LOCK_KEY = 0x77656674  # "weft"
CEILING_DATABASE = f"{PREFIX}ceiling"


class ServerUnavailable(SystemExit):
    """PostgreSQL could not be reached or used; the message says which and how to fix it."""


def database(system: str) -> str:
    return f"{PREFIX}{system}"


class Server:
    """The administrative connection, with the lock, and the databases made through it."""

    def __init__(self) -> None:
        where = "{user}@{host}:{port}".format(**_setup.pg_server())
        try:
            self.admin = _setup.pg_admin_connection()
        except psycopg.OperationalError as error:
            raise ServerUnavailable(
                f"compare.py: cannot connect to PostgreSQL as {where} "
                f"(database {_setup.PG_ADMIN_DATABASE}): {str(error).strip()}\n"
                "Start PostgreSQL there, or set WEFT_BENCH_PG_HOST, WEFT_BENCH_PG_PORT "
                "and WEFT_BENCH_PG_USER."
            ) from None
        (locked,) = self._one("SELECT pg_try_advisory_lock(%s)", LOCK_KEY)
        if not locked:
            self.admin.close()
            raise ServerUnavailable(
                f"compare.py: another compare.py is running against {where}; "
                "two at once would measure each other."
            )
        (self.version,) = self._one("SHOW server_version")
        self.created: list[str] = []

    def _one(self, query: str, *parameters: Any) -> tuple[Any, ...]:
        row = self.admin.execute(query, parameters or None).fetchone()
        assert row is not None
        return tuple(row)

    def create(self, names: Iterable[str]) -> None:
        """Create the databases, dropping any a killed run left behind first."""
        for name in names:
            self.admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            for attempt in range(10):
                try:
                    self.admin.execute(f"CREATE DATABASE {name}")
                    break
                except errors.ObjectInUse:
                    # Someone else is copying template1 (creating a database) right now.
                    if attempt == 9:
                        raise
                    time.sleep(1.0)
            self.created.append(name)

    def close(self) -> None:
        """Drop the databases (their connections too) and let the lock go."""
        for name in self.created:
            self.admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.created.clear()
        self.admin.close()


def commit_ceiling(seconds: float) -> float:
    """Commits per second of BEGIN; a single-row UPDATE; COMMIT on one connection.

    What one connection can commit at most on this server and machine: every job
    system needs at least one such commit per job, so its runs/s is measured against it.
    """
    with psycopg.connect(**_setup.pg_server(), dbname=CEILING_DATABASE, autocommit=True) as db:
        db.execute("CREATE TABLE IF NOT EXISTS ceiling (id integer PRIMARY KEY, n bigint)")
        db.execute("INSERT INTO ceiling VALUES (1, 0) ON CONFLICT (id) DO NOTHING")
        commits = 0
        begin = time.perf_counter()
        while (elapsed := time.perf_counter() - begin) < seconds:
            db.execute("BEGIN")
            db.execute("UPDATE ceiling SET n = n + 1 WHERE id = 1")
            db.execute("COMMIT")
            commits += 1
    return commits / elapsed

"""PgBouncer in transaction pooling, in front of a fault-test cluster (:mod:`.servers`).

The deployment docs/deployment.md describes: the workers' ``default`` database goes
through PgBouncer with ``pool_mode = transaction``, so each transaction may run on a
different server session, and nothing of a session (a LISTEN, a session lock, a
``set_config``) outlives its transaction for the client. :class:`PgBouncer` runs
``pgbouncer`` in the foreground as the servers' account (it refuses to run as root),
on a free port of 127.0.0.1, with every database of the cluster behind it, no
authentication (the cluster trusts 127.0.0.1 too), and its admin console for
:meth:`PgBouncer.stats`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg

from tests.example_server import free_port
from tests.faults.servers import (
    PostgresCluster,
    ServerSetupError,
    find_binary,
    stop_process,
    wait_until,
)

PGBOUNCER_INSTALL = "Debian: apt-get install pgbouncer"


class PgBouncer:
    """``pgbouncer`` pooling transactions in front of ``postgres``, until :meth:`stop`."""

    def __init__(self, directory: Path, postgres: PostgresCluster) -> None:
        self.binary = find_binary("pgbouncer", install=PGBOUNCER_INSTALL)
        self.directory = directory / "pgbouncer"
        self.postgres = postgres
        self.port = free_port()
        self.log = self.directory / "pgbouncer.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Write the configuration, start the server, and wait until it answers."""
        self.directory.mkdir(exist_ok=True)
        self.postgres.account.own(self.directory)
        config = self.directory / "pgbouncer.ini"
        users = self.directory / "userlist.txt"
        # Trust still needs the user listed; the password is never asked for.
        users.write_text(f'"{self.postgres.user}" ""\n')
        config.write_text(
            "[databases]\n"
            f"* = host=127.0.0.1 port={self.postgres.port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {users}\n"
            f"admin_users = {self.postgres.user}\n"
            "pool_mode = transaction\n"
            "default_pool_size = 20\n"
            "max_client_conn = 500\n"
            f"logfile = {self.log}\n"
        )
        process = self.process = subprocess.Popen(
            self.postgres.account.command(self.binary, config),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def answers() -> bool:
            if process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
                self.process = None
                raise ServerSetupError(f"pgbouncer exited with {process.returncode}:\n{tail}")
            try:
                self.stats()
            except psycopg.OperationalError:
                return False
            return True

        wait_until(answers, f"pgbouncer to answer on port {self.port}")

    def stop(self) -> None:
        """Shut PgBouncer down (its clients' connections drop) and wait for it."""
        process, self.process = self.process, None
        if process is not None:
            stop_process(process)

    def stats(self) -> dict[str, dict[str, object]]:
        """``SHOW STATS`` of the admin console: each database's counters by its name.

        The console speaks only the simple query protocol: a client-side cursor.
        """
        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=self.postgres.user,
            dbname="pgbouncer",
            autocommit=True,
            connect_timeout=10,
            cursor_factory=psycopg.ClientCursor,
        ) as console:
            cursor = console.execute("SHOW STATS")
            names = [column.name for column in cursor.description or ()]
            return {str(row[0]): dict(zip(names, row, strict=True)) for row in cursor.fetchall()}

    def transactions(self, database: str) -> int:
        """How many transactions PgBouncer has passed to ``database`` so far."""
        counters = self.stats().get(database, {})
        return int(counters.get("total_xact_count", 0))  # type: ignore[call-overload]

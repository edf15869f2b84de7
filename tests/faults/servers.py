"""Throwaway PostgreSQL and Redis servers for the fault tests, which stop and restart them.

Fault tests kill and restart the servers under real ``runjobs`` processes, so they never
use the shared servers at 127.0.0.1:5432 and :6379: :func:`fault_servers` makes a
PostgreSQL cluster (the installed server's ``initdb`` and ``pg_ctl``) and a
``redis-server`` of their own, on free ports of 127.0.0.1, in one temporary directory,
and removes all of it when the block ends, however it ends. A lifeline process
(:mod:`tests.faults.lifeline`) does the same for a session that was killed outright.

PostgreSQL refuses to run as root: as root, both servers run as the system user
``weft-faults``, created on first use. A missing binary is an error naming it and how
to install it; the fault tests never skip.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.example_server import free_port
from tests.patience import EVENTUALLY
from tests.processes import dies_with_parent

ROOT = Path(__file__).resolve().parents[2]
#: The unprivileged user the servers run as when the tests run as root.
SERVICE_USER = "weft-faults"
#: Every fault-test directory starts with this, under the system's temporary directory.
DIRECTORY_PREFIX = "weft-faults-"
STOP_MODES = ("smart", "fast", "immediate")
#: Appended to postgresql.conf: a cluster that need not survive a power cut.
POSTGRES_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_connections": "200",
}
POSTGRES_INSTALL = "Debian: apt-get install postgresql"
REDIS_INSTALL = "Debian: apt-get install redis-server"


class ServerSetupError(RuntimeError):
    """A fault-test server could not be set up or driven; the message says why."""


def find_binary(name: str, *, install: str, where: Path | None = None) -> Path:
    """The path of ``name`` (in ``where``, else on PATH); an error saying how to get it."""
    if where is not None:
        found: Path | None = where / name
    else:
        located = shutil.which(name)
        found = Path(located) if located else None
    if found is None or not os.access(found, os.X_OK):
        place = f"in {where}" if where is not None else "on PATH"
        raise ServerSetupError(
            f"the fault tests need {name}, which is not {place}; install it ({install})"
        )
    return found


def postgres_binary(name: str) -> Path:
    """A binary of the installed PostgreSQL server, from ``pg_config --bindir``."""
    pg_config = find_binary("pg_config", install=POSTGRES_INSTALL)
    bindir = Path(_run([str(pg_config), "--bindir"], "pg_config --bindir").strip())
    return find_binary(name, install=POSTGRES_INSTALL, where=bindir)


@dataclass(frozen=True)
class Account:
    """Who the servers run as: the current user, or (as root) an unprivileged one."""

    uid: int
    gid: int

    @classmethod
    def for_servers(cls) -> Account:
        if os.geteuid() != 0:
            return cls(os.geteuid(), os.getegid())
        try:
            entry = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            entry = _create_service_user()
        return cls(entry.pw_uid, entry.pw_gid)

    @classmethod
    def owning(cls, path: Path) -> Account:
        status = path.stat()
        return cls(status.st_uid, status.st_gid)

    def command(self, *argv: str | Path) -> list[str]:
        """``argv`` run as this account, killed if the thread that starts it ends."""
        switch = (
            []
            if self.uid == os.geteuid()
            else [
                f"--reuid={self.uid}",
                f"--regid={self.gid}",
                "--clear-groups",
            ]
        )
        return dies_with_parent([str(part) for part in argv], *switch)

    def own(self, path: Path) -> None:
        os.chown(path, self.uid, self.gid)


def _create_service_user() -> pwd.struct_passwd:
    useradd = find_binary("useradd", install="Debian: apt-get install passwd")
    command = [
        str(useradd),
        "--system",
        "--user-group",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        SERVICE_USER,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        # A session starting at the same moment may have created it first: fine.
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        raise ServerSetupError(
            f"could not create the user {SERVICE_USER} for the fault-test servers: "
            f"{done.stderr.strip() or f'useradd exited with {done.returncode}'}"
        ) from None


def _run(command: list[str], what: str, *, log: Path | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
        raise ServerSetupError(
            f"{what} failed (exit {done.returncode}): {' '.join(command)}\n"
            f"{done.stdout}{done.stderr}{tail}"
        )
    return done.stdout


def wait_until(condition: Callable[[], bool], what: str, timeout: float = EVENTUALLY) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise ServerSetupError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """Ask a server in the foreground to stop, give it 30 s to go, then kill it."""
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _stop_mode(mode: str) -> str:
    if mode not in STOP_MODES:
        raise ValueError(f"stop mode {mode!r} is not one of: {', '.join(STOP_MODES)}")
    return mode


class PostgresCluster:
    """A PostgreSQL cluster in ``directory``, listening on 127.0.0.1 only, on a free port.

    ``stop()``, ``start()`` and ``restart()`` keep the port and the data, as a real
    server restart does; clients see their connections drop and must reconnect.
    """

    user = "postgres"

    def __init__(self, directory: Path, account: Account) -> None:
        self.initdb = postgres_binary("initdb")
        self.pg_ctl = postgres_binary("pg_ctl")
        self.directory = directory
        self.data = data_directory(directory)
        self.log = directory / "postgres.log"
        self.account = account
        self.port = free_port()

    def create(self) -> None:
        """``initdb`` the cluster and give it the settings of :data:`POSTGRES_SETTINGS`."""
        _run(
            self.account.command(
                self.initdb,
                "--pgdata",
                self.data,
                "--username",
                self.user,
                "--auth",
                "trust",
                "--encoding",
                "UTF8",
                "--locale",
                "C",
                "--no-sync",
            ),
            "initdb",
        )
        settings = {
            **POSTGRES_SETTINGS,
            "port": str(self.port),
            # Its own socket directory: never the shared server's /var/run/postgresql.
            "unix_socket_directories": f"'{self.directory}'",
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write("\n# django-weft fault tests\n")
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    def start(self) -> None:
        self._ctl("start", "--log", self.log)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``smart``, ``fast`` or ``immediate``, as ``pg_ctl`` has them)."""
        self._ctl("stop", "--mode", _stop_mode(mode))

    def restart(self, mode: str = "fast") -> None:
        """Stop the server as ``stop(mode)`` does and start it again on the same port."""
        self._ctl("restart", "--mode", _stop_mode(mode), "--log", self.log)

    def is_running(self) -> bool:
        done = subprocess.run(
            self.account.command(self.pg_ctl, "status", "--pgdata", self.data),
            capture_output=True,
            check=False,
        )
        return done.returncode == 0

    def _ctl(self, action: str, *options: str | Path) -> None:
        _run(
            self.account.command(
                self.pg_ctl, action, "--pgdata", self.data, "--wait", "--timeout", "60", *options
            ),
            f"pg_ctl {action}",
            log=self.log,
        )

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (FileNotFoundError, IndexError, ValueError):
            return None

    def connection_settings(self) -> dict[str, str]:
        """``HOST``, ``PORT``, ``USER`` and ``NAME`` for a Django ``DATABASES`` entry."""
        return {"HOST": "127.0.0.1", "PORT": str(self.port), "USER": self.user, "NAME": "postgres"}

    def query(
        self, sql: str, params: tuple[object, ...] = (), *, database: str = "postgres"
    ) -> list[tuple[object, ...]]:
        """Run one statement on a connection of its own; the rows it returned."""
        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=self.user,
            dbname=database,
            autocommit=True,
            connect_timeout=10,
        ) as connection:
            cursor = connection.execute(sql, params or None)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []


def data_directory(directory: Path) -> Path:
    return directory / "postgres"


class RedisServer:
    """``redis-server`` on a free port of 127.0.0.1, keeping nothing on disk.

    ``stop()`` then ``start()`` brings it back on the same port, empty: a restarted
    Redis has forgotten every group and message, as a real one without persistence has.
    """

    def __init__(self, directory: Path, account: Account) -> None:
        self.binary = find_binary("redis-server", install=REDIS_INSTALL)
        self.directory = directory
        self.log = directory / "redis.log"
        self.account = account
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it answers ``PING``."""
        if self.process is not None:
            raise ServerSetupError(f"redis-server on port {self.port} is already running")
        process = self.process = subprocess.Popen(
            self.account.command(
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.directory,
                "--pidfile",
                redis_pidfile(self.directory),
                "--logfile",
                self.log,
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def answers() -> bool:
            if process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
                self.process = None
                raise ServerSetupError(f"redis-server exited with {process.returncode}:\n{tail}")
            return self.ping()

        wait_until(answers, f"redis-server to answer on port {self.port}")

    def stop(self) -> None:
        """Shut the server down and wait for it; clients' connections drop."""
        process, self.process = self.process, None
        if process is not None:
            stop_process(process)

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as client:
                client.sendall(b"PING\r\n")
                return client.recv(7).startswith(b"+PONG")
        except OSError:
            return False


def redis_pidfile(directory: Path) -> Path:
    return directory / "redis.pid"


@dataclass
class FaultServers:
    """The servers of one fault-test session and the directory they live in."""

    directory: Path
    postgres: PostgresCluster
    redis: RedisServer


def remove_servers(directory: Path) -> None:
    """Stop whatever still runs from ``directory`` at once, then remove the directory.

    Works from the files alone (the cluster's ``postmaster.pid``, Redis's pid file), so
    the lifeline of a killed session can do it as well as the session itself.
    """
    if not directory.exists():
        return
    try:
        data = data_directory(directory)
        if (data / "postmaster.pid").exists():
            pg_ctl = postgres_binary("pg_ctl")
            subprocess.run(
                Account.owning(data).command(
                    pg_ctl, "stop", "--pgdata", data, "--mode", "immediate", "--wait"
                ),
                capture_output=True,
                check=False,
                timeout=60,
            )
        _kill_redis(redis_pidfile(directory))
        for mount_point in mounts_under(directory):
            unmount(mount_point)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def mounts_under(directory: Path) -> list[Path]:
    """The mount points inside ``directory`` (a test's tmpfs), deepest first."""
    inside = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = Path(line.split()[1].replace("\\040", " "))
        if directory in point.parents:
            inside.append(point)
    return sorted(inside, key=lambda point: len(point.parts), reverse=True)


def unmount(mount_point: Path) -> None:
    """Unmount ``mount_point``; lazily if something still holds a file there open (a
    server's backend that has not let go yet), so it is gone from the tree either way."""
    for command in (["umount", str(mount_point)], ["umount", "--lazy", str(mount_point)]):
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
        if done.returncode == 0:
            return
    raise ServerSetupError(f"could not unmount {mount_point}: {done.stderr.strip()}")


def _kill_redis(pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text().strip())
        command_line = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return  # no pid file, or that process is gone
    if b"redis-server" in command_line:
        os.kill(pid, signal.SIGKILL)


class Lifeline:
    """A process that cleans ``directory`` up once this process is gone, however it went.

    It waits for the end of a pipe whose other end only this process holds: the pipe
    closes when this process exits, even by SIGKILL. In a session of its own, so a
    Ctrl-C meant for pytest does not reach it.
    """

    def __init__(self, directory: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.lifeline", str(directory)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            start_new_session=True,
        )

    def release(self) -> None:
        """Let the lifeline go (after an orderly clean-up, there is nothing left for it)."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(60)


@contextmanager
def fault_servers() -> Iterator[FaultServers]:
    """A running PostgreSQL cluster and Redis server, gone when the block ends."""
    account = Account.for_servers()
    directory = Path(tempfile.mkdtemp(prefix=DIRECTORY_PREFIX))
    account.own(directory)
    lifeline = Lifeline(directory)
    with ExitStack() as clean_up:
        # Undone last to first: Redis stopped as it expects, the rest at once, then
        # the lifeline let go.
        clean_up.callback(lifeline.release)
        clean_up.callback(remove_servers, directory)
        servers = FaultServers(
            directory, PostgresCluster(directory, account), RedisServer(directory, account)
        )
        clean_up.callback(servers.redis.stop)
        servers.postgres.create()
        servers.postgres.start()
        servers.redis.start()
        yield servers

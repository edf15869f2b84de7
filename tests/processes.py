"""Real processes on the test's servers: ``manage.py runjobs`` and an ASGI server.

Each child gets the environment that points it at the database and the channel layer
the test process itself uses (:func:`service_env`), so the same helpers serve the
normal suite and the fault tests' throwaway servers. Each child is started through
``setpriv --pdeathsig KILL`` (util-linux): if the test process is killed, its children
die with it instead of retrying a vanished database for ever.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.example_server import free_port
from tests.patience import EVENTUALLY

ROOT = Path(__file__).resolve().parent.parent
REDIS_LAYER = "channels_redis.core.RedisChannelLayer"


class ChildProcess(subprocess.Popen[str]):
    """A subprocess whose output is collected line by line as it comes."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-overload]
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.stdout is not None
        for line in self.stdout:
            self.lines.append(line)

    def finish(self, timeout: float = 30.0) -> str:
        """Wait for the exit and return everything the process printed."""
        try:
            self.wait(timeout)
        finally:
            self.kill()
            self.wait()
            self._reader.join(5)
            if self.stdout is not None:
                self.stdout.close()
        return "".join(self.lines)

    def stop(self, timeout: float = 30.0) -> str:
        """SIGTERM, then :meth:`finish`; what it printed."""
        if self.poll() is None:
            self.send_signal(signal.SIGTERM)
        return self.finish(timeout)

    def printed(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def output(self) -> str:
        """What the process printed so far."""
        return "".join(self.lines)


class Runjobs(ChildProcess):
    """A ``manage.py runjobs`` subprocess."""


class AsgiServer(ChildProcess):
    """uvicorn serving ``tests.asgi:application`` on ``port`` of 127.0.0.1."""

    port: int

    def url(self, path: str, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"


def service_env() -> dict[str, str]:
    """The environment that points a child at this process's database and channel layer."""
    database = connection.settings_dict
    env = {
        "WEFT_TEST_DATABASE": "postgres" if connection.vendor == "postgresql" else "sqlite",
        "WEFT_TEST_DATABASE_NAME": str(database["NAME"]),
        # One prefix for the test process and its children, whichever layer each uses.
        "WEFT_TEST_REDIS_PREFIX": f"weft-test-{os.getpid()}",
    }
    if connection.vendor == "postgresql":
        env |= {
            "WEFT_TEST_PG_HOST": str(database["HOST"]),
            "WEFT_TEST_PG_PORT": str(database["PORT"]),
            "WEFT_TEST_PG_USER": str(database["USER"]),
        }
    layer = settings.CHANNEL_LAYERS["default"]
    if layer["BACKEND"] == REDIS_LAYER:
        env |= {
            "WEFT_TEST_CHANNEL_LAYER": "redis",
            "WEFT_TEST_REDIS_URL": layer["CONFIG"]["hosts"][0],
            "WEFT_TEST_REDIS_PREFIX": layer["CONFIG"]["prefix"],
        }
    return env


def child_env(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
        **service_env(),
        **(extra_env or {}),
    }


def dies_with_parent(argv: list[str], *setpriv_options: str) -> list[str]:
    """``argv`` through util-linux's ``setpriv``, killed if its parent thread ends.

    ``setpriv`` sets Linux's parent-death signal, applies ``setpriv_options`` (a change
    of user, say) and execs, so the child's pid is the program's own. Start children
    from the test's own thread: that is the parent the kernel watches.
    """
    return ["setpriv", "--pdeathsig", "KILL", *setpriv_options, "--", *argv]


def runjobs(*flags: str, extra_env: dict[str, str] | None = None) -> Runjobs:
    """A ``runjobs`` subprocess using the database the current test uses."""
    return Runjobs(
        dies_with_parent([sys.executable, "-m", "django", "runjobs", *flags]),
        cwd=ROOT,
        env=child_env({"WEFT_TEST_LOG_LEVEL": "INFO", **(extra_env or {})}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@contextmanager
def asgi_server(*, extra_env: dict[str, str] | None = None) -> Iterator[AsgiServer]:
    """uvicorn serving the test project on a free port, until the block ends."""
    port = free_port()
    server = AsgiServer(
        dies_with_parent(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "tests.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--lifespan",
                "off",
            ]
        ),
        cwd=ROOT,
        env=child_env(extra_env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    server.port = port
    try:
        wait_for(lambda: port_is_open(port) or server.poll() is not None, what="uvicorn")
        if server.poll() is not None:
            raise AssertionError(f"uvicorn exited with {server.returncode}:\n{server.finish()}")
        yield server
    finally:
        server.stop(20)


def port_is_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_for(condition, timeout: float = EVENTUALLY, what: str = "condition") -> None:  # type: ignore[no-untyped-def]
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)

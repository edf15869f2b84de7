"""The example project, started for real: ``runjobs --http`` on its own SQLite file."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.patience import EVENTUALLY

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def example_env(database: Path, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the example project's processes, on ``database``."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "example_project.settings",
        "WEFT_EXAMPLE_DB": str(database),
        "PYTHONPATH": str(ROOT),
        **(extra_env or {}),
    }


def run_in_example(database: Path, code: str) -> None:
    """Run Python in the example project, on the served database (as an operator's shell)."""
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code],
        env=example_env(database),
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


@contextmanager
def example_server(database: Path, *, extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """Migrate, load the demo and serve the example; yields its base URL."""
    env = example_env(database, extra_env)
    manage = [sys.executable, str(ROOT / "manage.py")]
    for command in (["migrate", "--no-input", "-v0"], ["demo"]):
        subprocess.run([*manage, *command], env=env, cwd=ROOT, check=True, capture_output=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [*manage, "runjobs", "--http", f"127.0.0.1:{port}", "--shutdown-grace", "2"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + EVENTUALLY
        while True:
            try:
                urllib.request.urlopen(f"{base}/accounts/login/", timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the example server did not come up") from None
                time.sleep(0.1)
        yield base
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

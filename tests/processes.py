"""Start real ``manage.py runjobs`` processes on the test database."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


class Runjobs(subprocess.Popen[str]):
    """A ``runjobs`` subprocess whose output is collected line by line as it comes."""

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
            self._reader.join(5)
            if self.stdout is not None:
                self.stdout.close()
        return "".join(self.lines)

    def printed(self, text: str) -> bool:
        return any(text in line for line in self.lines)


def runjobs(*flags: str, extra_env: dict[str, str] | None = None) -> Runjobs:
    """A ``runjobs`` subprocess using the database the current test uses."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "WEFT_TEST_DATABASE_NAME": str(connection.settings_dict["NAME"]),
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
        "WEFT_TEST_LOG_LEVEL": "INFO",
        **(extra_env or {}),
    }
    return Runjobs(
        [sys.executable, "-m", "django", "runjobs", *flags],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(condition, timeout: float = 30.0, what: str = "condition") -> None:  # type: ignore[no-untyped-def]
    """Poll ``condition`` until it holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)

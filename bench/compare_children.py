"""Running ``compare_measure.py`` children, and stopping them with all they started.

Each child runs in a session (so a process group) of its own, and its worker
processes stay in that group; stopping a child is one SIGTERM to the group, then
SIGKILL to what is left after a grace. Ctrl-C reaches only ``compare.py``, which
stops the child in its ``finally``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _setup
import compare_server

#: How long a stopped child and its workers get to exit before they are killed.
STOP_GRACE = 20.0


class MeasurementFailed(Exception):
    """A child exited with an error; the message quotes the end of its log."""


def run(
    system: str, measurement: str, options: dict[str, Any], *, conn_max_age: int, logs: Path
) -> dict[str, Any]:
    """Run one measurement of ``system`` in a child and return its result."""
    label = options.get("label", f"{system}-{measurement}")
    result = logs / f"{label}.json"
    log = logs / f"{label}.log"
    environment = {
        **os.environ,
        "WEFT_COMPARE_SYSTEM": system,
        "WEFT_COMPARE_DATABASE": compare_server.database(system),
        "WEFT_COMPARE_CONN_MAX_AGE": str(conn_max_age),
    }
    command = [
        sys.executable,
        str(_setup.REPO / "bench" / "compare_measure.py"),
        measurement,
        "--options",
        json.dumps(options),
        "--logs",
        str(logs),
        "--result",
        str(result),
    ]
    with log.open("wb") as output:
        child = subprocess.Popen(
            command,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            child.wait()
        finally:
            _stop_group(child)
    if child.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise MeasurementFailed(
            f"{system} {measurement} failed (exit {child.returncode}); the end of {log}:\n{tail}"
        )
    loaded: dict[str, Any] = json.loads(result.read_text())
    return loaded


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    """Stop the child and every process left in its group (its workers)."""
    if not _signal_group(child.pid, signal.SIGTERM):
        return
    deadline = time.monotonic() + STOP_GRACE
    while time.monotonic() < deadline:
        child.poll()  # a zombie still counts as a member of its group
        if not _signal_group(child.pid, 0):
            return
        time.sleep(0.1)
    _signal_group(child.pid, signal.SIGKILL)
    child.wait()


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to the group; False once no process is left in it."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    return True

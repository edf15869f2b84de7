"""A fault-test session for ``test_harness`` to end badly; never collected on its own.

``test_harness`` runs it in a pytest session of its own, reads what it started from the
file ``WEFT_PROBE_REPORT`` names, then lets it fail, interrupts it or kills it
(``WEFT_PROBE_END``: ``fails`` or ``waits``), and checks that nothing it started lives on.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from django_weft.models import WorkerProcess
from tests.faults.servers import FaultServers
from tests.processes import Runjobs, wait_for


@pytest.mark.django_db(transaction=True)
def test_probe(servers: FaultServers, start_runjobs: Callable[..., Runjobs]) -> None:
    worker = start_runjobs("--no-schedules")
    wait_for(WorkerProcess.objects.exists, what="the probe's runjobs to register")
    assert servers.redis.process is not None
    report = {
        "directory": str(servers.directory),
        "ports": [servers.postgres.port, servers.redis.port],
        "pids": [servers.postgres.postmaster_pid(), servers.redis.process.pid, worker.pid],
    }
    Path(os.environ["WEFT_PROBE_REPORT"]).write_text(json.dumps(report))
    if os.environ["WEFT_PROBE_END"] == "fails":
        raise AssertionError("the probe fails on purpose")
    time.sleep(600)  # until test_harness interrupts or kills this session

"""Across processes: uvicorn serves the socket, runjobs runs the job, Redis carries it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from websockets.sync.client import connect

from tests.example_server import free_port
from tests.processes import ROOT, runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_live_run_executed_by_another_process_reaches_the_socket() -> None:
    """A run started over a real websocket and executed by runjobs streams back over Redis."""
    user = get_user_model().objects.create_user("owner")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"

    shared = {
        "WEFT_TEST_CHANNEL_LAYER": "redis",
        "WEFT_TEST_REDIS_PREFIX": f"weft-live-{os.getpid()}",
    }
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "tests.asgi:application",
            "--port",
            str(port),
            "--lifespan",
            "off",
        ],
        cwd=ROOT,
        env={
            **os.environ,
            **shared,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "WEFT_TEST_DATABASE_NAME": str(connection.settings_dict["NAME"]),
            "PYTHONPATH": str(ROOT),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = runjobs("--no-schedules", extra_env=shared)
    try:
        wait_for(lambda: _listening(port), what="uvicorn to listen")
        with connect(
            f"ws://127.0.0.1:{port}/ws/weft/runs/", additional_headers={"Cookie": cookie}
        ) as socket:
            frames = Frames(socket)
            assert frames.next()["type"] == "snapshot"
            socket.send(
                json.dumps(
                    {
                        "type": "start",
                        "job": "shell.run",
                        "args": {"command": "npm test", "lines": 5},
                        "request_id": "x",
                    }
                )
            )
            run_id = frames.until(lambda f: f["type"] == "started")["run"]["id"]
            done = frames.until(
                lambda f: (
                    f["type"] == "run" and f["run"]["id"] == run_id and f["run"]["status"] == "done"
                )
            )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(20)
        worker.send_signal(signal.SIGTERM)
        worker.finish()

    assert done["run"]["state"]["output"] == "".join(f"line {n}\n" for n in range(1, 6))
    states = [f for f in frames.seen if f["type"] == "state" and f["run"] == run_id]
    assert states, "the output streamed from the runjobs process while it ran"
    phases = [
        f["run"]["phase"] for f in frames.seen if f["type"] == "run" and f["run"]["id"] == run_id
    ]
    assert "running" in phases, "the claim in the runjobs process reached the socket"


class Frames:
    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.seen: list[dict[str, Any]] = []

    def next(self, timeout: float = 15) -> dict[str, Any]:
        frame: dict[str, Any] = json.loads(self.socket.recv(timeout=timeout))
        self.seen.append(frame)
        return frame

    def until(self, match: Any, timeout: float = 15) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            frame = self.next(max(0.1, deadline - time.monotonic()))
            if match(frame):
                return frame


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0

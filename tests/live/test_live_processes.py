"""Across processes: uvicorn serves the socket, runjobs runs the job, Redis carries it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from tests.live_client import open_live
from tests.processes import asgi_server, runjobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

#: Both processes on channels-redis, whichever layer this process uses.
ON_REDIS = {"WEFT_TEST_CHANNEL_LAYER": "redis"}


def test_live_run_executed_by_another_process_reaches_the_socket() -> None:
    """A run started over a real websocket and executed by runjobs streams back over Redis."""
    user = get_user_model().objects.create_user("owner")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))

    worker = runjobs("--no-schedules", extra_env=ON_REDIS)
    try:
        with asgi_server(extra_env=ON_REDIS) as server, open_live(server, user) as socket:
            assert socket.next()["type"] == "snapshot"
            socket.send(
                {
                    "type": "start",
                    "job": "shell.run",
                    "args": {"command": "npm test", "lines": 5},
                    "request_id": "x",
                }
            )
            run_id = socket.until(lambda f: f["type"] == "started")["run"]["id"]
            done = socket.until(
                lambda f: (
                    f["type"] == "run" and f["run"]["id"] == run_id and f["run"]["status"] == "done"
                )
            )
    finally:
        worker.stop()

    assert done["run"]["state"]["output"] == "".join(f"line {n}\n" for n in range(1, 6))
    states = [f for f in socket.seen if f["type"] == "state" and f["run"] == run_id]
    assert states, "the output streamed from the runjobs process while it ran"
    phases = [
        f["run"]["phase"] for f in socket.seen if f["type"] == "run" and f["run"]["id"] == run_id
    ]
    assert "running" in phases, "the claim in the runjobs process reached the socket"

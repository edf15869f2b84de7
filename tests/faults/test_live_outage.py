"""A Redis outage under real processes: uvicorn serves the socket, runjobs runs the jobs.

Redis stops while a real websocket is open; runs are started over it and finished by
runjobs meanwhile; Redis starts again on the same port, empty. The socket stays open,
hears that changes stopped and resumed, gets a snapshot with what happened, and a new
connect is accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from django_weft.models import Run
from tests.faults.servers import RedisServer
from tests.live_client import Frame, LiveSocket, open_live
from tests.processes import AsgiServer, Runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

#: Long enough for the probe's back-off (5 s at most) and a loaded machine.
RECOVERY = 30

STARTS = [
    ("shell.run", {"command": "make", "lines": 3}),
    ("tests.sleep", {"seconds": 0.3}),
    ("tests.noop", {}),
]


def owner() -> Any:
    user = get_user_model().objects.create_user("owner")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    return user


def start(socket: LiveSocket, job: str, args: dict[str, Any], request_id: str) -> str:
    socket.send({"type": "start", "job": job, "args": args, "request_id": request_id})
    reply = socket.until(lambda f: f.get("request_id") == request_id)
    assert reply["type"] == "started", reply
    run_id: str = reply["run"]["id"]
    return run_id


def is_snapshot(frame: Frame) -> bool:
    return frame["type"] == "snapshot"


def is_live(frame: Frame) -> bool:
    return frame["type"] == "live"


def finished(run_id: str) -> Callable[[Frame], bool]:
    return lambda f: f["type"] == "run" and (f["run"]["id"], f["run"]["status"]) == (run_id, "done")


def test_live_view_resumes_after_redis_restarts(
    redis: RedisServer,
    start_runjobs: Callable[..., Runjobs],
    uvicorn: AsgiServer,
) -> None:
    """Runs finish while Redis is down; the view resumes with them; a new connect works."""
    user = owner()
    worker = start_runjobs("--no-schedules")
    with open_live(uvicorn, user) as socket:
        assert is_snapshot(socket.next())

        redis.stop()
        assert socket.until(is_live, RECOVERY) == {"type": "live", "ok": False}
        during = [start(socket, job, args, f"during-{n}") for n, (job, args) in enumerate(STARTS)]
        wait_for(
            lambda: all(Run.objects.get(pk=pk).is_finished for pk in during),
            RECOVERY,
            "the runs started during the outage to finish",
        )
        assert {Run.objects.get(pk=pk).status for pk in during} == {"done"}
        assert worker.poll() is None, worker.stop()

        redis.start()
        assert socket.until(is_live, RECOVERY) == {"type": "live", "ok": True}
        snapshot = socket.until(is_snapshot)
        seen = {run["id"]: run["status"] for run in snapshot["runs"]}
        assert {pk: seen.get(pk) for pk in during} == {pk: "done" for pk in during}

        with open_live(uvicorn, user) as newcomer:
            assert is_snapshot(newcomer.next()), "the first connect after the outage works"
            after = start(socket, "tests.noop", {}, "after")
            for watcher in (socket, newcomer):
                watcher.until(finished(after), RECOVERY)

    output = worker.stop()
    assert output.count("publishing: the channel layer failed") == 1, output
    assert output.count("publishing: the channel layer works again") == 1, output

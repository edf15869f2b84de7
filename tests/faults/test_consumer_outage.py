"""Live sockets across a Redis outage, through channels' WebsocketCommunicator.

Redis is the throwaway server, stopped and started under open sockets; the consumer
runs in this process, on the test's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import override_settings

from django_weft.engine.worker.loop import Worker
from django_weft.models import Run, RunStatus
from django_weft.operations import change_document, open_document, start
from django_weft.sockets.outages import CLOSE_RESYNC_FAILED
from example_project.shell.jobs import shell
from tests.faults.servers import PostgresCluster, RedisServer
from tests.live_client import CommunicatorSocket, Frame, open_socket
from tests.patience import EVENTUALLY

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

#: Long enough for the probe's back-off (5 s at most) and a loaded machine.
RECOVERY = EVENTUALLY


def is_run(run_id: str, status: str | None = None) -> Callable[[Frame], bool]:
    return lambda f: (
        f["type"] == "run"
        and f["run"]["id"] == run_id
        and (status is None or f["run"]["status"] == status)
    )


def lost(frame: Frame) -> bool:
    return frame == {"type": "live", "ok": False}


def back(frame: Frame) -> bool:
    return frame == {"type": "live", "ok": True}


@sync_to_async
def make_owner() -> Any:
    user = get_user_model().objects.create_user("owner")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    return get_user_model().objects.get(pk=user.pk)


@sync_to_async
def start_shell(owner: Any, lines: int = 1) -> str:
    return str(start(shell, {"command": "ls", "lines": lines}, owner=owner).pk)


@sync_to_async
def status_of(run_id: str) -> str:
    return str(Run.objects.get(pk=run_id).status)


async def test_consumer_socket_lives_through_an_outage_and_resyncs(
    redis: RedisServer,
    sockets: list[CommunicatorSocket],
    worker_threads: Callable[[], Worker],
) -> None:
    """Redis stops: live false, the socket answers; back: live true, a fresh snapshot."""
    owner = await make_owner()
    socket = await open_socket(sockets, owner)
    worker_threads()

    redis.stop()
    await socket.until(lost, timeout=RECOVERY)
    during = await start_shell(owner, lines=2)
    deadline = time.monotonic() + RECOVERY
    while await status_of(during) != RunStatus.DONE:
        assert time.monotonic() < deadline, "the run finishes without Redis"
        await socket.send("{not json")  # the socket keeps answering meanwhile
        assert (await socket.next())["code"] == "malformed"
        await asyncio.sleep(0.05)
    assert not [f for f in socket.seen if f["type"] == "run"], "no change came through"

    redis.start()
    await socket.until(back, timeout=RECOVERY)
    snapshot = await socket.until(lambda f: f["type"] == "snapshot")
    (finished,) = [run for run in snapshot["runs"] if run["id"] == during]
    assert finished["status"] == "done", "the snapshot holds what happened meanwhile"

    after = await start_shell(owner)
    await socket.until(is_run(after, "done"))  # the restarted Redis carries changes again


async def test_consumer_connect_during_an_outage_is_accepted(
    redis: RedisServer, sockets: list[CommunicatorSocket]
) -> None:
    """A socket opened while Redis is down gets its snapshot and live false, then resumes."""
    owner = await make_owner()
    redis.stop()
    socket = await open_socket(sockets, owner)
    assert lost(await socket.next())

    redis.start()
    await socket.until(back, timeout=RECOVERY)
    await socket.until(lambda f: f["type"] == "snapshot")
    started = await start_shell(owner)
    await socket.until(is_run(started))


async def test_consumer_first_connect_after_redis_returns_succeeds(
    redis: RedisServer, sockets: list[CommunicatorSocket]
) -> None:
    """Pooled connections a restart closed are retried: the next connect is accepted."""
    owner = await make_owner()
    await (await open_socket([], owner)).close()  # leaves connections in the pool
    # Stopped and started without letting the event loop run: the server closed the
    # pool's connections, and nothing here has noticed yet.
    redis.stop()
    redis.start()

    socket = await open_socket(sockets, owner)
    started = await start_shell(owner)
    await socket.until(lambda f: sees(f, started), timeout=RECOVERY)


def sees(frame: Frame, run_id: str) -> bool:
    """Whether ``frame`` shows the run: as a change, or in a snapshot after a resync."""
    if frame["type"] == "snapshot":
        return any(run["id"] == run_id for run in frame["runs"])
    return is_run(run_id)(frame)


async def test_consumer_outage_is_logged_once_for_all_sockets(
    redis: RedisServer, sockets: list[CommunicatorSocket], caplog: pytest.LogCaptureFixture
) -> None:
    """Five sockets, one outage: one warning when it starts, one line when it ends."""
    caplog.set_level(logging.INFO, logger="django_weft.live")
    owner = await make_owner()
    opened = [await open_socket(sockets, owner) for _ in range(5)]

    redis.stop()
    for socket in opened:
        await socket.until(lost, timeout=RECOVERY)
    redis.start()
    for socket in opened:
        await socket.until(lambda f: f["type"] == "snapshot", timeout=RECOVERY)

    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    sockets_said = [line for line in said if line.startswith("live sockets:")]
    assert len(sockets_said) == 2, said
    assert "the channel layer failed" in sockets_said[0]
    assert "works again" in sockets_said[1]


async def test_consumer_resync_resends_subscribed_documents(
    redis: RedisServer, sockets: list[CommunicatorSocket]
) -> None:
    """A document changed during the outage arrives at its new revision after it."""
    owner = await make_owner()
    document = await sync_to_async(open_document)(
        "shell:entries", schema="shell.entries", initial=lambda: {"list": []}
    )
    with override_settings(WEFT_DOCUMENT_ACCESS="tests.live_access.shell_documents"):
        socket = await open_socket(sockets, owner)
        await socket.send({"type": "subscribe", "documents": ["shell:entries"]})
        assert (await socket.next())["document"]["revision"] == 0

        redis.stop()
        await socket.until(lost, timeout=RECOVERY)
        await sync_to_async(change_document)(document, lambda data: data["list"].append("x"))
        redis.start()

        changed = await socket.until(lambda f: f["type"] == "document", timeout=RECOVERY)
    assert changed["document"] == {"key": "shell:entries", "revision": 1, "data": {"list": ["x"]}}


async def test_consumer_that_cannot_resync_closes_with_4503(
    redis: RedisServer, postgres: PostgresCluster, sockets: list[CommunicatorSocket]
) -> None:
    """Redis returns while the database is down: no snapshot to send, so the socket closes."""
    owner = await make_owner()
    socket = await open_socket(sockets, owner)
    redis.stop()
    await socket.until(lost, timeout=RECOVERY)
    postgres.stop()
    redis.start()
    await socket.until(back, timeout=RECOVERY)
    closed = await socket.communicator.receive_output(timeout=RECOVERY)
    assert closed == {"type": "websocket.close", "code": CLOSE_RESYNC_FAILED}
    postgres.start()


@sync_to_async
def make_operator() -> Any:
    user = get_user_model().objects.create_user("operator")
    user.user_permissions.add(Permission.objects.get(codename="view_run"))
    return get_user_model().objects.get(pk=user.pk)


@override_settings(WEFT_LIVE_RECHECK_INTERVAL=0.05)
async def test_consumer_looks_at_its_user_again_once_the_database_is_back(
    postgres: PostgresCluster,
    sockets: list[CommunicatorSocket],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A look at the socket's user that the database cannot answer leaves the socket open
    (logged); once the database is back, a revocation is seen again."""
    operator = await make_operator()
    socket = await open_socket(sockets, operator)
    with caplog.at_level(logging.WARNING, logger="django_weft.live"):
        postgres.stop()
        deadline = time.monotonic() + RECOVERY
        while "could not look at a live socket's user again" not in caplog.text:
            assert time.monotonic() < deadline, "a look failed for want of the database"
            await asyncio.sleep(0.05)
        postgres.start()
    assert socket.communicator.output_queue.empty(), "still open, nothing sent"
    await sync_to_async(operator.user_permissions.clear)()
    closed = await socket.communicator.receive_output(timeout=RECOVERY)
    assert (closed["type"], closed["code"]) == ("websocket.close", 4403)

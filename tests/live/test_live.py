"""Publishing (django_weft.live.publisher): who is published to, when, and in what shape.

Publishing through a Redis outage is in tests/faults/test_publishing_outage.py, the
publishing thread's rounds in tests/live/test_outbox.py.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_weft.engine.limits import fairness
from django_weft.jobs.registry import registry
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.live.outbox import Outbox
from django_weft.models import Document, Run
from django_weft.operations import start
from django_weft.sockets.consumers import RunsConsumer
from django_weft.testing import flush_live
from tests.live_client import CommunicatorSocket, open_socket

pytestmark = pytest.mark.django_db(transaction=True)

IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def queries_of_a_start() -> int:
    """A start's queries, the fair shares' read among them (a process reads them once a
    second: each count starts afresh so that two counts compare)."""
    fairness.forget()
    with CaptureQueriesContext(connection) as queries:
        start(registry.get("tests.noop"), {})
    return len(queries)


def make_user(name: str, *codenames: str) -> Any:
    user = get_user_model().objects.create_user(name)
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return get_user_model().objects.get(pk=user.pk)


def is_run(frame: dict[str, Any]) -> bool:
    return frame["type"] == "run"


@override_settings(CHANNEL_LAYERS=IN_MEMORY)
def test_in_memory_layer_is_not_published_to_once_the_sockets_loop_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A socket that came and went with its event loop leaves nobody to publish to: no
    change is handed to the publishing thread, which never starts."""
    fresh = Outbox(publisher._deliver)
    monkeypatch.setattr(publisher, "outbox", fresh)
    user = make_user("visitor")

    async def visit() -> None:
        socket = await open_socket([], user)
        await socket.close()

    asyncio.run(visit())
    start(registry.get("tests.noop"), {})
    assert not fresh.started


@pytest.mark.asyncio
async def test_publishing_reads_nothing_on_the_thread_that_made_the_change(
    sockets: list[CommunicatorSocket],
) -> None:
    """A start costs its caller the same queries as with no channel layer at all: the run
    is read again, and its views sent, by the publishing thread."""
    with override_settings(CHANNEL_LAYERS={}):
        nobody_listening = await sync_to_async(queries_of_a_start)()
    socket = await open_socket(sockets, await sync_to_async(make_user)("op", "view_run"))
    listened_to = await sync_to_async(queries_of_a_start)()

    assert listened_to == nobody_listening
    assert (await socket.until(is_run))["run"]["job"] == "tests.noop", "and it was published"


class CountingConsumer(RunsConsumer):
    """The live socket, noting each channel-layer message it is sent."""

    received: ClassVar[list[str]] = []

    async def dispatch(self, message: dict[str, Any]) -> None:
        if message["type"].startswith("weft."):
            self.received.append(message["type"])
        await super().dispatch(message)


@pytest.mark.asyncio
async def test_a_burst_of_changes_reaches_a_socket_in_a_few_messages(
    sockets: list[CommunicatorSocket], monkeypatch: pytest.MonkeyPatch
) -> None:
    """250 runs changed together reach an operator as 250 run frames carried by three
    messages (RUNS_PER_MESSAGE runs each), not 250: a burst cannot fill a socket's channel
    (100 messages on channels-redis), which would drop what does not fit."""
    monkeypatch.setattr(CountingConsumer, "received", [])
    communicator = WebsocketCommunicator(CountingConsumer.as_asgi(), "/ws/weft/runs/")
    communicator.scope["user"] = await sync_to_async(make_user)("op", "view_run")
    assert (await communicator.connect(timeout=5))[0]
    socket = CommunicatorSocket(communicator, await communicator.receive_json_from(timeout=5))
    sockets.append(socket)

    def change_many() -> set[str]:
        now = timezone.now()
        runs = Run.objects.bulk_create(Run(job="tests.noop", created_at=now) for _ in range(250))
        publisher.publish(Changes(runs=dict.fromkeys(run.pk for run in runs)))
        return {str(run.pk) for run in runs}

    changed = await sync_to_async(change_many)()
    seen = {(await socket.until(is_run))["run"]["id"] for _ in changed}
    assert seen == changed
    assert CountingConsumer.received == ["weft.runs"] * 3


@pytest.mark.asyncio
async def test_run_frames_carry_the_runs_revision(sockets: list[CommunicatorSocket]) -> None:
    """Each view of a run carries its revision, one more at each change, for clients to
    keep the highest (the owner's and the guest's alike), and its job's version."""
    owner = await sync_to_async(make_user)("owner")
    mine = await open_socket(sockets, owner)
    theirs = await open_socket(sockets, await sync_to_async(make_user)("guest"))
    run = await sync_to_async(start)(registry.get("tests.noop"), {}, owner=owner)
    await sync_to_async(flush_live)()
    await sync_to_async(run.record_abort_request)(timezone.now())
    await sync_to_async(publisher.publish)(Changes(runs={run.pk: None}))

    for socket in (mine, theirs):
        first = await socket.until(is_run)
        second = await socket.until(is_run)
        assert (first["run"]["revision"], second["run"]["revision"]) == (1, 2)
        assert second["run"]["job_version"] == registry.get("tests.noop").version
    assert second["run"]["id"] == str(run.pk)


@pytest.mark.asyncio
async def test_state_changed_in_the_same_round_as_its_run_is_a_state_frame_too(
    sockets: list[CommunicatorSocket],
) -> None:
    """A round that publishes a run and its state sends the owner the run frame, then the
    ``state`` frame docs/live.md promises for every change of a run's state (it used to
    be folded into the run frame); a guest gets the run's guest view and no state."""
    owner = await sync_to_async(make_user)("owner")
    run = await sync_to_async(start)(registry.get("tests.noop"), {}, owner=owner)
    await sync_to_async(flush_live)()
    mine = await open_socket(sockets, owner)
    theirs = await open_socket(sockets, await sync_to_async(make_user)("guest"))

    def write_state() -> None:
        # Written without publishing, then both published in one hand-over: one round.
        state = Document.objects.create(
            key=f"run:{run.pk}", schema="tests.state", revision=1, data={"output": "hello"}
        )
        Run.objects.filter(pk=run.pk).update(state=state)
        publisher.publish(Changes(runs={run.pk: None}, documents={state.pk: None}))
        flush_live()

    await sync_to_async(write_state)()
    frame = await mine.next()
    assert frame["type"] == "run"
    assert frame["run"]["state"] == {"output": "hello"}
    assert await mine.next() == {
        "type": "state",
        "run": str(run.pk),
        "revision": 1,
        "state": {"output": "hello"},
    }
    guest = await theirs.next()
    assert guest["type"] == "run"
    assert "state" not in guest["run"]
    await theirs.send({"type": "page", "after": str(run.pk), "request_id": "ping"})
    assert (await theirs.next())["type"] == "page", "no state frame reached the guest"

"""The live socket, through channels' WebsocketCommunicator on the configured layer."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Permission
from django.test import override_settings

from django_weft.engine.worker.loop import Worker
from django_weft.live import projections
from django_weft.models import Run, RunStatus
from django_weft.operations import change_document, open_document, start
from django_weft.sockets.consumers import RunsConsumer
from tests.live_client import CommunicatorSocket, open_socket
from tests.patience import EVENTUALLY

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def owner() -> Any:
    user = get_user_model().objects.create_user("owner")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture
def guest() -> Any:
    return get_user_model().objects.create_user("guest")


async def run_count() -> int:
    return await sync_to_async(Run.objects.count)()


async def test_consumer_snapshot_tells_the_variant(
    owner: Any, guest: Any, sockets: list[CommunicatorSocket]
) -> None:
    """The owner's snapshot says it may start runs; a guest's says it may not."""
    mine = await open_socket(sockets, owner)
    theirs = await open_socket(sockets, guest)
    assert (mine.snapshot["user"], mine.snapshot["can_start"]) == ("owner", True)
    assert (theirs.snapshot["user"], theirs.snapshot["can_start"]) == ("guest", False)
    assert mine.snapshot["runs"] == theirs.snapshot["runs"] == []


async def test_consumer_anonymous_gets_nothing_unless_allowed(
    sockets: list[CommunicatorSocket],
) -> None:
    """A signed-out visitor is refused; with WEFT_LIVE_ALLOW_ANONYMOUS it watches as a guest."""
    communicator = WebsocketCommunicator(RunsConsumer.as_asgi(), "/ws/weft/runs/")
    communicator.scope["user"] = AnonymousUser()
    connected, _ = await communicator.connect(timeout=EVENTUALLY)
    assert connected, "accepted, so that the close code reaches a browser"
    closed = await communicator.receive_output(timeout=EVENTUALLY)
    assert closed == {"type": "websocket.close", "code": 4403}
    with override_settings(WEFT_LIVE_ALLOW_ANONYMOUS=True):
        socket = await open_socket(sockets, AnonymousUser())
        assert (socket.snapshot["user"], socket.snapshot["can_start"]) == (None, False)


@pytest.mark.parametrize("anonymous_allowed", [False, True])
async def test_consumer_refuses_a_deactivated_user_whatever_the_middleware(
    owner: Any, anonymous_allowed: bool
) -> None:
    """A user object that is no longer active is refused at connect (4403), even where
    signed-out visitors may watch: no guest view for an account that was switched off."""
    await sync_to_async(get_user_model().objects.filter(pk=owner.pk).update)(is_active=False)
    owner.is_active = False
    communicator = WebsocketCommunicator(RunsConsumer.as_asgi(), "/ws/weft/runs/")
    communicator.scope["user"] = owner
    with override_settings(WEFT_LIVE_ALLOW_ANONYMOUS=anonymous_allowed):
        connected, _ = await communicator.connect(timeout=EVENTUALLY)
        assert connected, "accepted, so that the close code reaches a browser"
        closed = await communicator.receive_output(timeout=EVENTUALLY)
    assert closed == {"type": "websocket.close", "code": 4403}


async def test_consumer_start_dedupes_by_request_id(
    owner: Any, sockets: list[CommunicatorSocket]
) -> None:
    """A resent start with the same request id returns the same run; one row exists."""
    socket = await open_socket(sockets, owner)
    frame = {
        "type": "start",
        "job": "shell.run",
        "args": {"command": "ls", "lines": 1},
        "request_id": "r1",
    }
    await socket.send(frame)
    first = await socket.until(lambda f: f["type"] == "started")
    await socket.send(frame)
    again = await socket.until(lambda f: f["type"] == "started")
    assert first["run"]["id"] == again["run"]["id"]
    assert first["request_id"] == "r1"
    assert first["run"]["args"] == {"command": "ls", "lines": 1}
    assert await run_count() == 1


async def test_consumer_guest_start_and_abort_are_refused(
    owner: Any, guest: Any, sockets: list[CommunicatorSocket]
) -> None:
    """A guest's start and abort get error frames and change nothing."""
    mine = await open_socket(sockets, owner)
    theirs = await open_socket(sockets, guest)
    await mine.send(
        {
            "type": "start",
            "job": "shell.run",
            "args": {"command": "ls", "lines": 9},
            "request_id": "a",
        }
    )
    run_id = (await mine.until(lambda f: f["type"] == "started"))["run"]["id"]

    await theirs.send(
        {
            "type": "start",
            "job": "shell.run",
            "args": {"command": "rm", "lines": 1},
            "request_id": "b",
        }
    )
    refused = await theirs.until(lambda f: f["type"] == "error")
    assert (refused["code"], refused["request_id"]) == ("forbidden", "b")
    assert "may not start" in refused["message"]

    await theirs.send({"type": "abort", "run": run_id, "request_id": "c"})
    refused = await theirs.until(lambda f: f["type"] == "error")
    assert refused["code"] == "forbidden"
    assert "needs django_weft.change_run, or to be its owner" in refused["message"]
    run = await sync_to_async(Run.objects.get)(pk=run_id)
    assert (run.status, run.abort_requested_at) == (RunStatus.QUEUED, None)
    assert await run_count() == 1


async def test_consumer_concurrency_refusal_is_an_error_frame(
    owner: Any, sockets: list[CommunicatorSocket]
) -> None:
    """A start refused by the job's concurrency limit answers with concurrency_limit."""
    socket = await open_socket(sockets, owner)
    await socket.send(
        {
            "type": "start",
            "job": "shell.run",
            "args": {"command": "a", "lines": 5},
            "request_id": "1",
        }
    )
    await socket.until(lambda f: f["type"] == "started")
    await socket.send(
        {
            "type": "start",
            "job": "shell.run",
            "args": {"command": "b", "lines": 5},
            "request_id": "2",
        }
    )
    refused = await socket.until(lambda f: f["type"] == "error")
    assert (refused["code"], refused["request_id"]) == ("concurrency_limit", "2")
    assert 'job "shell.run" allows 1 unfinished run' in refused["message"]
    assert await run_count() == 1


async def test_consumer_owner_sees_output_guest_sees_phase(
    owner: Any, guest: Any, sockets: list[CommunicatorSocket], worker_threads: Callable[[], Worker]
) -> None:
    """The owner gets state frames with the output; the guest only run frames without it."""
    mine = await open_socket(sockets, owner)
    theirs = await open_socket(sockets, guest)
    worker_threads()
    await mine.send(
        {
            "type": "start",
            "job": "shell.run",
            "args": {"command": "npm test", "lines": 5},
            "request_id": "r",
        }
    )
    run_id = (await mine.until(lambda f: f["type"] == "started"))["run"]["id"]

    await mine.until(lambda f: f["type"] == "run" and f["run"]["status"] == "done")

    # The output reaches the owner in state frames, or inside a run frame when the
    # publisher coalesced them into one round (a busy machine makes rounds bigger; a run
    # frame of a round without a state change carries none): either way it only grows,
    # and all of it arrives, the last state frame possibly after the run's "done" (the
    # run thread publishes the state, the loop the finish).
    def output(frame: dict[str, Any]) -> str | None:
        if frame["type"] == "state" and frame["run"] == run_id:
            return str(frame["state"]["output"])
        if frame["type"] == "run" and frame["run"]["id"] == run_id and frame["run"]["state"]:
            return str(frame["run"]["state"]["output"])
        return None

    whole = "".join(f"line {n}\n" for n in range(1, 6))
    if whole not in [output(frame) for frame in mine.seen]:
        await mine.until(lambda f: output(f) == whole)
    outputs = [text for frame in mine.seen if (text := output(frame)) is not None]
    assert [o.count("\n") for o in outputs] == sorted(o.count("\n") for o in outputs)
    assert outputs[-1] == whole

    finished = await theirs.until(
        lambda f: f["type"] == "run" and f["run"]["id"] == run_id and f["run"]["status"] == "done"
    )
    phases = [
        f["run"]["phase"] for f in theirs.seen if f["type"] == "run" and f["run"]["id"] == run_id
    ]
    # Each round of the publisher reads the run as it is then: changes close together
    # are one frame with the latest, so "queued" and "running" may be skipped, but the
    # phases only move forward and the last is "done".
    order = ["queued", "running", "done"]
    assert set(phases) <= set(order)
    assert [order.index(p) for p in phases] == sorted(order.index(p) for p in phases)
    assert phases[-1] == "done"
    assert not [f for f in theirs.seen if f["type"] == "state"], "a guest never gets output"
    assert set(finished["run"]) == set(projections.GUEST_RUN_KEYS)
    assert not set(finished["run"]) & {"state", "result", "error_message", "idempotency_key"}
    assert finished["run"]["args"] == {"command": "npm test", "lines": 5}


async def test_consumer_abort_stops_the_run(
    owner: Any, sockets: list[CommunicatorSocket], worker_threads: Callable[[], Worker]
) -> None:
    """The owner's abort is a request: the run stops at its next sleep and ends aborted."""
    socket = await open_socket(sockets, owner)
    worker_threads()
    await socket.send(
        {
            "type": "start",
            "job": "shell.run",
            "args": {"command": "tail", "lines": 1000},
            "request_id": "t",
        }
    )
    run_id = (await socket.until(lambda f: f["type"] == "started"))["run"]["id"]
    await socket.until(lambda f: f["type"] == "state" and f["state"]["output"].count("\n") >= 2)
    await socket.send({"type": "abort", "run": run_id, "request_id": "stop"})
    reply = await socket.until(lambda f: f["type"] in ("abort_requested", "error"))
    assert reply == {"type": "abort_requested", "request_id": "stop", "run": run_id}
    aborted = await socket.until(
        lambda f: (
            f["type"] == "run" and f["run"]["id"] == run_id and f["run"]["status"] == "aborted"
        )
    )
    assert 2 <= aborted["run"]["state"]["output"].count("\n") < 1000

    await socket.send({"type": "abort", "run": run_id})
    refused = await socket.until(lambda f: f["type"] == "error")
    assert refused["code"] == "finished"


BAD_FRAMES: list[tuple[str, str, str]] = [
    ("{not json", "malformed", "malformed JSON"),
    ("[1, 2]", "malformed", "JSON object"),
    ('"start"', "malformed", "JSON object"),
    ("{}", "unknown_type", "unknown frame type None"),
    ('{"type": "explode"}', "unknown_type", "'explode'"),
    ('{"type": "start", "job": "shell.run", "args": {}}', "invalid", "start"),
    ('{"type": "start", "job": 7, "args": [], "request_id": "x"}', "invalid", "start"),
    (
        '{"type": "start", "job": "no.such.job", "args": {}, "request_id": "x"}',
        "invalid",
        "no.such.job",
    ),
    (
        '{"type": "start", "job": "shell.run", "args": {"lines": -1}, "request_id": "x"}',
        "invalid",
        "shell.run",
    ),
    ('{"type": "abort", "run": "not-a-uuid"}', "invalid", "abort"),
    ('{"type": "abort", "run": "00000000-0000-0000-0000-000000000000"}', "not_found", "no run"),
    ('{"type": "subscribe", "documents": "shell:entries"}', "invalid", "subscribe"),
]


async def test_consumer_bad_frames_get_error_frames(
    owner: Any, sockets: list[CommunicatorSocket]
) -> None:
    """Every bad frame gets an error frame naming the problem; the socket stays usable."""
    socket = await open_socket(sockets, owner)
    for text, code, words in BAD_FRAMES:
        await socket.send(text)
        error = await socket.next()
        assert error["type"] == "error", text
        assert error["code"] == code, (text, error)
        assert words in error["message"] or words in json.dumps(error.get("fields", {})), (
            text,
            error,
        )
    await socket.communicator.send_to(bytes_data=b"\x00\x01")
    assert (await socket.next())["code"] == "malformed"
    await socket.send("x" * 70_000)
    huge = await socket.next()
    assert (huge["code"], "70000 characters" in huge["message"]) == ("too_large", True)

    invalid = [f for f in socket.seen if f.get("code") == "invalid" and "fields" in f]
    assert any("request_id" in f["fields"] for f in invalid), "a missing field is named"
    assert any("args.lines" in f["fields"] for f in invalid), "a bad arg is named"
    assert await run_count() == 0, "no bad frame touched a row"

    await socket.send(
        {
            "type": "start",
            "job": "shell.run",
            "args": {"command": "ok", "lines": 1},
            "request_id": "ok",
        }
    )
    assert (await socket.next())["type"] == "started"


async def test_consumer_guest_view_is_computed_once_per_change(
    owner: Any, guest: Any, sockets: list[CommunicatorSocket], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One change computes the guest view once, however many guests watch."""
    guests = [await open_socket(sockets, guest) for _ in range(5)]
    calls: list[str] = []
    real = projections.run_views

    def counting(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
        calls.append(str(run.pk))
        return real(run)

    monkeypatch.setattr(projections, "run_views", counting)
    from example_project.shell.jobs import shell

    run = await sync_to_async(start)(shell, {"command": "ls", "lines": 1}, owner=owner)
    for socket in guests:
        frame = await socket.until(lambda f: f["type"] == "run")
        assert frame["run"]["id"] == str(run.pk)
        assert "state" not in frame["run"]
    assert calls == [str(run.pk)]


async def test_consumer_documents_snapshot_and_changes(
    owner: Any, guest: Any, sockets: list[CommunicatorSocket]
) -> None:
    """A subscribed document arrives as a snapshot, then every revision; access is checked."""
    document = await sync_to_async(open_document)(
        "shell:entries", schema="shell.entries", initial=lambda: {"list": []}
    )
    socket = await open_socket(sockets, guest)
    await socket.send({"type": "subscribe", "documents": ["shell:entries"]})
    refused = await socket.next()
    assert (refused["code"], "shell:entries" in refused["message"]) == ("forbidden", True)

    with override_settings(WEFT_DOCUMENT_ACCESS="tests.live_access.shell_documents"):
        await socket.send({"type": "subscribe", "documents": ["shell:entries"]})
        first = await socket.next()
        assert first == {
            "type": "document",
            "document": {"key": "shell:entries", "revision": 0, "data": {"list": []}},
        }
        await sync_to_async(change_document)(document, lambda data: data["list"].append("hello"))
        changed = await socket.next()
        assert changed["document"] == {
            "key": "shell:entries",
            "revision": 1,
            "data": {"list": ["hello"]},
        }

        await socket.send({"type": "subscribe", "documents": [f"run:{'0' * 32}"]})
        assert (await socket.next())["code"] == "forbidden", "run state never comes on its own"


async def test_consumer_abort_asked_twice_is_acknowledged_twice(
    owner: Any, sockets: list[CommunicatorSocket]
) -> None:
    """A second abort of a running run that was asked to stop is acknowledged, not refused."""
    socket = await open_socket(sockets, owner)
    from example_project.shell.jobs import shell

    run = await sync_to_async(start)(shell, {"command": "x", "lines": 5}, owner=owner)
    await sync_to_async(Run.objects.filter(pk=run.pk).update)(status=RunStatus.RUNNING)
    for request_id in ("a1", "a2"):
        await socket.send({"type": "abort", "run": str(run.pk), "request_id": request_id})
        reply = await socket.until(lambda f: f["type"] in ("abort_requested", "error"))
        assert reply == {"type": "abort_requested", "request_id": request_id, "run": str(run.pk)}


async def test_consumer_subscribe_to_a_document_not_written_yet(
    guest: Any, sockets: list[CommunicatorSocket]
) -> None:
    """A document that does not exist yet is announced empty, then arrives when written."""
    socket = await open_socket(sockets, guest)
    with override_settings(WEFT_DOCUMENT_ACCESS="tests.live_access.shell_documents"):
        await socket.send({"type": "subscribe", "documents": ["shell:later"]})
        empty = await socket.next()
        assert empty == {
            "type": "document",
            "document": {"key": "shell:later", "revision": None, "data": None},
        }
        document = await sync_to_async(open_document)(
            "shell:later", schema="s", initial=lambda: {"n": 0}
        )
        await sync_to_async(change_document)(document, lambda data: data.__setitem__("n", 1))
        changed = await socket.next()
        assert changed["document"] == {"key": "shell:later", "revision": 1, "data": {"n": 1}}


async def test_consumer_snapshot_lists_recently_finished_runs_in_the_right_view(
    owner: Any, guest: Any, sockets: list[CommunicatorSocket]
) -> None:
    """The snapshot holds unfinished runs and the latest finished ones, each in this user's view."""
    from django.utils import timezone

    from example_project.shell.jobs import shell

    def prepare() -> list[str]:
        ids = []
        for n in range(3):
            run = start(shell, {"command": f"c{n}", "lines": 0}, owner=owner if n != 1 else None)
            Run.objects.filter(pk=run.pk).update(
                status=RunStatus.DONE, finished_at=timezone.now() + timedelta(minutes=3 - n)
            )
            ids.append(str(run.pk))
        return ids

    ids = await sync_to_async(prepare)()
    with override_settings(WEFT_LIVE_RECENT_RUNS=2):
        mine = await open_socket(sockets, owner)
    runs = mine.snapshot["runs"]
    assert [run["id"] for run in runs] == [ids[0], ids[1]], "the two finished last"
    assert "state" in runs[0], "the owner's own run in full"
    assert "state" not in runs[1], "someone else's run as a guest"

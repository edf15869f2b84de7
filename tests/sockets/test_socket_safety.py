"""The live socket against pages of other sites, big backlogs and hostile frames.

The consumer checks the handshake's Origin itself (the test project's ASGI stack has no
origin validator, on purpose), bounds what a snapshot and a socket's subscriptions can
hold, and answers every frame it cannot use with an error frame, the socket staying open.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from django_weft.models import Document, Run, RunStatus
from django_weft.operations import open_document
from django_weft.sockets.consumers import RunsConsumer
from django_weft.sockets.frames import MAX_DEPTH
from tests.live_client import CommunicatorSocket, open_socket
from tests.patience import EVENTUALLY

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

HOSTS = [".weft.example", "testserver"]


@pytest.fixture
def viewer() -> Any:
    user = get_user_model().objects.create_user("viewer")
    user.user_permissions.add(Permission.objects.get(codename="view_run"))
    return get_user_model().objects.get(pk=user.pk)


@pytest_asyncio.fixture
async def sockets() -> AsyncIterator[list[CommunicatorSocket]]:
    opened: list[CommunicatorSocket] = []
    yield opened
    for socket in opened:
        await socket.close()


async def handshake(user: Any, origin: str | None, scheme: str = "ws") -> dict[str, Any]:
    """What the server sends first to a handshake to weft.example from a page of ``origin``."""
    headers = [(b"host", b"weft.example")]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    communicator = WebsocketCommunicator(RunsConsumer.as_asgi(), "/ws/weft/runs/", headers)
    communicator.scope["user"] = user
    communicator.scope["scheme"] = scheme
    await communicator.connect(timeout=EVENTUALLY)
    first: dict[str, Any] = await communicator.receive_output(timeout=EVENTUALLY)
    await communicator.disconnect()
    return first


# -- Origin ------------------------------------------------------------------------------------


@override_settings(ALLOWED_HOSTS=HOSTS)
@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "null",
        "file://",
        "weft.example",
        # Another origin whose host ALLOWED_HOSTS' wildcard allows: not the socket's own.
        "http://uploads.weft.example:8080",
        "https://weft.example",
        "http://weft.example:8443",
    ],
)
async def test_socket_refuses_a_page_of_another_site(viewer: Any, origin: str) -> None:
    """A page of another origin carrying the user's cookies gets nothing: closed, 4403."""
    first = await handshake(viewer, origin)
    assert (first["type"], first["code"]) == ("websocket.close", 4403)


@override_settings(ALLOWED_HOSTS=HOSTS, CSRF_TRUSTED_ORIGINS=["https://*.partner.example"])
@pytest.mark.parametrize(
    ("origin", "scheme"),
    [
        ("http://weft.example", "ws"),
        ("https://weft.example", "wss"),
        ("https://app.partner.example", "ws"),
        (None, "ws"),
    ],
)
async def test_socket_accepts_its_own_origin_trusted_origins_and_non_browsers(
    viewer: Any, origin: str | None, scheme: str
) -> None:
    """Its own origin (the scheme it came in on), CSRF_TRUSTED_ORIGINS (wildcards too) and
    clients without an Origin."""
    first = await handshake(viewer, origin, scheme)
    assert first["type"] == "websocket.send"
    assert json.loads(first["text"])["type"] == "snapshot"


# -- bounds ------------------------------------------------------------------------------------


def make_runs(count: int, *, finished: int = 0) -> list[Run]:
    now = timezone.now()
    Run.objects.bulk_create(
        Run(job="tests.noop", created_at=now - timedelta(seconds=n)) for n in range(count)
    )
    Run.objects.bulk_create(
        Run(
            job="tests.noop",
            status=RunStatus.DONE,
            created_at=now - timedelta(days=1),
            finished_at=now - timedelta(hours=n),
        )
        for n in range(finished)
    )
    return list(Run.objects.filter(status=RunStatus.QUEUED).order_by("-created_at"))


@override_settings(WEFT_LIVE_SNAPSHOT_LIMIT=3, WEFT_LIVE_RECENT_RUNS=2)
async def test_snapshot_is_bounded_and_pages_on(viewer: Any, sockets: list[Any]) -> None:
    """Seven unfinished runs, pages of three: truncated snapshot, then two pages."""
    queued = await sync_to_async(make_runs)(7, finished=5)
    socket = await open_socket(sockets, viewer)
    snapshot = socket.snapshot
    unfinished = [r["id"] for r in snapshot["runs"] if r["status"] == "queued"]
    assert unfinished == [str(run.pk) for run in queued[:3]], "newest first"
    assert len([r for r in snapshot["runs"] if r["status"] == "done"]) == 2
    assert (snapshot["truncated"], snapshot["next"]) == (True, str(queued[2].pk))
    seen = list(unfinished)
    following = snapshot["next"]
    while following is not None:
        await socket.send({"type": "page", "after": following, "request_id": "p"})
        page = await socket.until(lambda f: f["type"] == "page")
        assert len(page["runs"]) <= 3
        assert page["truncated"] == (page["next"] is not None)
        seen += [r["id"] for r in page["runs"]]
        following = page["next"]
    assert seen == [str(run.pk) for run in queued], "every unfinished run, once, in order"


@override_settings(WEFT_LIVE_SNAPSHOT_LIMIT=2)
async def test_guest_snapshot_is_bounded_too(sockets: list[Any]) -> None:
    """A guest's snapshot is bounded like an operator's."""
    await sync_to_async(make_runs)(5)
    guest = await sync_to_async(get_user_model().objects.create_user)("guest")
    socket = await open_socket(sockets, guest)
    assert len(socket.snapshot["runs"]) == 2
    assert socket.snapshot["truncated"] is True


@override_settings(
    WEFT_LIVE_MAX_SUBSCRIPTIONS=3,
    WEFT_DOCUMENT_ACCESS="tests.live_access.shell_documents",
)
async def test_subscriptions_are_capped_and_deduplicated(viewer: Any, sockets: list[Any]) -> None:
    """Repeating a subscription costs nothing; a socket watches at most the cap."""
    socket = await open_socket(sockets, viewer)
    for _ in range(20):
        await socket.send({"type": "subscribe", "documents": ["shell:a", "shell:a"]})
    await socket.send({"type": "subscribe", "documents": ["shell:b", "shell:a", "shell:c"]})
    sent = [(await socket.next())["document"]["key"] for _ in range(3)]
    assert sent == ["shell:a", "shell:b", "shell:c"], "each document sent once"
    await socket.send({"type": "subscribe", "documents": ["shell:d"]})
    refused = await socket.until(lambda f: f["type"] == "error")
    assert refused["code"] == "too_many_subscriptions"
    assert "at most 3 documents" in refused["message"]


# -- hostile frames ----------------------------------------------------------------------------


def may_start(user: Any) -> Any:
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    return get_user_model().objects.get(pk=user.pk)


HOSTILE = [
    pytest.param("[" * 20_000 + "]" * 20_000, "malformed", id="nested-too-deeply"),
    pytest.param(
        '{"type": "start", "job": {"x": 1}, "request_id": []}', "invalid", id="wrong-types"
    ),
    pytest.param('{"type": "abort", "run": "not-a-uuid"}', "invalid", id="bad-uuid"),
    pytest.param('{"type": 7}', "unknown_type", id="type-not-text"),
    pytest.param("1e999999", "malformed", id="a-number"),
    pytest.param(
        '{"type": "page", "after": "00000000-0000-0000-0000-000000000000"}',
        "not_found",
        id="page-after-nothing",
    ),
    pytest.param(
        json.dumps(
            {
                "type": "start",
                "job": "tests.sleep",
                "request_id": "r",
                "args": {"seconds": {"a": [[[[1]]]]}},
            }
        ),
        "invalid",
        id="nested-args",
    ),
    pytest.param(
        '{"type": "subscribe", "documents": "shell:a"}', "invalid", id="documents-not-a-list"
    ),
]


@pytest.mark.parametrize(("text", "code"), HOSTILE)
async def test_hostile_frames_get_an_error_frame_and_the_socket_lives(
    viewer: Any, sockets: list[Any], text: str, code: str
) -> None:
    """Each bad frame is answered with its error code; the next good frame still works."""
    viewer = await sync_to_async(may_start)(viewer)
    socket = await open_socket(sockets, viewer)
    await socket.send(text)
    error = await socket.until(lambda f: f["type"] == "error")
    assert error["code"] == code, error
    await socket.send({"type": "start", "job": "tests.noop", "request_id": "after"})
    started = await socket.until(lambda f: f["type"] in ("started", "error"))
    assert started["type"] == "started", "the socket still serves its user"


def nested(depth: int, *, inner: str = "1") -> str:
    """Arrays ``depth`` levels deep around ``inner``."""
    return "[" * depth + inner + "]" * depth


@override_settings(WEFT_LIVE_MAX_FRAME=1_000_000)
@pytest.mark.parametrize(
    "text",
    [
        pytest.param(nested(100_000), id="arrays-100000-deep"),
        pytest.param(
            '{"type": "start", "job": "tests.noop", "request_id": "r", "args": '
            + '{"a": ' * 100_000
            + "1"
            + "}" * 100_000
            + "}",
            id="args-100000-deep",
        ),
        pytest.param(
            json.dumps({"type": "subscribe", "documents": json.loads(nested(MAX_DEPTH))}),
            id="one-level-over",
        ),
    ],
)
async def test_frames_deeper_than_the_limit_are_refused_naming_it(
    viewer: Any, sockets: list[Any], text: str
) -> None:
    """However deep (within the frame size), an error frame naming the limit; no
    RecursionError, no dead socket."""
    viewer = await sync_to_async(may_start)(viewer)
    socket = await open_socket(sockets, viewer)
    await socket.send(text)
    error = await socket.until(lambda f: f["type"] == "error")
    assert error["code"] == "malformed"
    assert f"at most {MAX_DEPTH} levels" in error["message"]
    assert await sync_to_async(Run.objects.count)() == 0
    await socket.send({"type": "start", "job": "tests.noop", "request_id": "after"})
    started = await socket.until(lambda f: f["type"] in ("started", "error"))
    assert started["type"] == "started", "the socket still serves its user"


async def test_frames_at_the_depth_limit_are_read(viewer: Any, sockets: list[Any]) -> None:
    """A frame exactly MAX_DEPTH (32) levels deep is read: its fields are judged."""
    socket = await open_socket(sockets, viewer)
    documents = json.loads(nested(MAX_DEPTH - 1))
    await socket.send({"type": "subscribe", "documents": documents})
    error = await socket.until(lambda f: f["type"] == "error")
    assert error["code"] == "invalid", "read and refused for its fields, not its depth"


# -- re-subscribing ----------------------------------------------------------------------------


class Statements:
    """Every SQL statement run on the connection it is installed on."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        self.sql.append(sql)
        return execute(sql, params, many, context)


@sync_to_async
def install(statements: Statements) -> None:
    """On the connection of the thread the socket's database calls run in."""
    connection.execute_wrappers.append(statements)


@sync_to_async
def uninstall(statements: Statements) -> None:
    connection.execute_wrappers.remove(statements)


@override_settings(WEFT_DOCUMENT_ACCESS="tests.live_access.shell_documents")
async def test_resubscribing_to_watched_documents_reads_and_sends_nothing(
    viewer: Any, sockets: list[Any]
) -> None:
    """Documents already watched are not read again nor sent again, however often."""
    for key in ("shell:a", "shell:b"):
        await sync_to_async(open_document)(key, schema="tests", initial=lambda: {"n": 1})
    socket = await open_socket(sockets, viewer)
    await socket.send({"type": "subscribe", "documents": ["shell:a", "shell:b"]})
    for _ in range(2):
        await socket.until(lambda f: f["type"] == "document")
    statements = Statements()
    await install(statements)
    try:
        for _ in range(10):
            await socket.send({"type": "subscribe", "documents": ["shell:b", "shell:a"]})
        await socket.send(
            {"type": "page", "after": "00000000-0000-0000-0000-000000000000", "request_id": "p"}
        )
        following = await socket.next()
    finally:
        await uninstall(statements)
    assert (following["type"], following["request_id"]) == ("error", "p"), "nothing sent before"
    table = Document._meta.db_table
    assert statements.sql, "the statements of the socket's thread are recorded"
    assert not [sql for sql in statements.sql if table in sql], "no document read again"

"""Revocation reaches open sockets (django_weft.sockets.revocation).

A socket looks at its user again every ``WEFT_LIVE_RECHECK_INTERVAL`` seconds and before
each frame its client sends: one who signed out or was deactivated is closed with 4401,
one who lost what the socket's view needed with 4403. The periodic look is shown with a
tiny interval and a generous deadline for the close; the look before a frame with an
interval of an hour, so that only the frame can have caused it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Permission
from django.contrib.sessions.models import Session
from django.test import Client, override_settings
from django.utils import timezone

from django_weft.models import Run
from django_weft.operations import start
from django_weft.sockets.consumers import RunsConsumer
from django_weft.sockets.revocation import CLOSE_PERMISSION_LOST, CLOSE_SIGNED_OUT
from django_weft.testing import flush_live
from tests.live_client import CommunicatorSocket, Frame, open_socket
from tests.patience import EVENTUALLY

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

#: A periodic look several times a second: a revocation is noticed well within DEADLINE.
SOON = {"WEFT_LIVE_RECHECK_INTERVAL": 0.05}
#: No periodic look during a test: only a frame can make the socket look again.
NEVER = {"WEFT_LIVE_RECHECK_INTERVAL": 3600}
DEADLINE = EVENTUALLY


@sync_to_async
def make_user(name: str, *codenames: str) -> Any:
    user = get_user_model().objects.create_user(name, password="secret-1")
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return get_user_model().objects.get(pk=user.pk)


@sync_to_async
def published_start(job: str) -> Run:
    """A run started and published: no frame of it comes to a socket opened after this."""
    run = start(job)
    flush_live()
    return run


@sync_to_async
def revoke(user: Any, codename: str) -> None:
    get_user_model().objects.get(pk=user.pk).user_permissions.remove(
        Permission.objects.get(codename=codename)
    )


@sync_to_async
def deactivate(user: Any) -> None:
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)


async def closed(socket: CommunicatorSocket, timeout: float = DEADLINE) -> dict[str, Any]:
    """The close the server sends, skipping the frames that came before it."""
    while True:
        output: dict[str, Any] = await socket.communicator.receive_output(timeout=timeout)
        if output["type"] == "websocket.close":
            return output


async def answer(socket: CommunicatorSocket, frame: Frame) -> dict[str, Any]:
    """What the server sends first after ``frame``: its answer, or a close."""
    await socket.send(frame)
    output: dict[str, Any] = await socket.communicator.receive_output(timeout=DEADLINE)
    return output


PING = {"type": "page", "after": "00000000-0000-0000-0000-000000000000", "request_id": "ping"}


# -- signed in by a session, as a browser is ---------------------------------------------------


class SignedIn:
    """A browser signed in as ``user``: its test client, and a socket with its cookie."""

    def __init__(self, user: Any) -> None:
        self.user = user
        self.client = Client()
        self.client.force_login(user)
        self.session_key = self.client.cookies["sessionid"].value

    async def open(self, opened: list[CommunicatorSocket]) -> CommunicatorSocket:
        cookie = f"sessionid={self.session_key}".encode()
        communicator = WebsocketCommunicator(
            AuthMiddlewareStack(RunsConsumer.as_asgi()), "/ws/weft/runs/", [(b"cookie", cookie)]
        )
        connected, _ = await communicator.connect(timeout=EVENTUALLY)
        assert connected
        snapshot: Frame = await communicator.receive_json_from(timeout=EVENTUALLY)
        assert snapshot["type"] == "snapshot"
        assert snapshot["user"] == self.user.get_username(), "signed in by the cookie"
        socket = CommunicatorSocket(communicator, snapshot)
        opened.append(socket)
        return socket


def logged_out(browser: SignedIn) -> None:
    browser.client.logout()  # django.contrib.auth.logout: the session is flushed


def session_deleted(browser: SignedIn) -> None:
    Session.objects.filter(session_key=browser.session_key).delete()


def session_expired(browser: SignedIn) -> None:
    Session.objects.filter(session_key=browser.session_key).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )


def password_changed(browser: SignedIn) -> None:
    user = get_user_model().objects.get(pk=browser.user.pk)
    user.set_password("secret-2")  # Django signs the user's other sessions out
    user.save()


def deactivated(browser: SignedIn) -> None:
    get_user_model().objects.filter(pk=browser.user.pk).update(is_active=False)


def removed(browser: SignedIn) -> None:
    get_user_model().objects.filter(pk=browser.user.pk).delete()


SIGN_OUTS = [logged_out, session_deleted, session_expired, password_changed, deactivated, removed]


@override_settings(**SOON)
@pytest.mark.parametrize("sign_out", SIGN_OUTS, ids=[f.__name__ for f in SIGN_OUTS])
async def test_revocation_signed_out_socket_is_closed_4401(
    sockets: list[CommunicatorSocket], sign_out: Callable[[SignedIn], None]
) -> None:
    """However the browser's session stops signing the user in, its socket is closed."""
    operator = await make_user("operator", "view_run")
    browser = await sync_to_async(SignedIn)(operator)
    socket = await browser.open(sockets)
    await sync_to_async(sign_out)(browser)
    close = await closed(socket)
    assert close["code"] == CLOSE_SIGNED_OUT == 4401
    assert "signed out" in close["reason"]


@override_settings(**NEVER)
async def test_revocation_a_frame_after_logout_is_not_handled(
    sockets: list[CommunicatorSocket],
) -> None:
    """The socket looks before each frame: a start sent after logging out starts nothing."""
    owner = await make_user("owner", "add_run")
    browser = await sync_to_async(SignedIn)(owner)
    socket = await browser.open(sockets)
    await sync_to_async(logged_out)(browser)
    close = await answer(socket, {"type": "start", "job": "tests.noop", "request_id": "r"})
    assert (close["type"], close["code"]) == ("websocket.close", 4401)
    assert await sync_to_async(Run.objects.count)() == 0


@override_settings(**SOON)
async def test_revocation_a_socket_whose_user_keeps_everything_stays_open(
    sockets: list[CommunicatorSocket],
) -> None:
    """Looks that find the user as they were change nothing; another session's logout
    does not close this one."""
    operator = await make_user("operator", "view_run")
    browser = await sync_to_async(SignedIn)(operator)
    other = await sync_to_async(SignedIn)(operator)
    socket = await browser.open(sockets)
    await sync_to_async(logged_out)(other)
    await asyncio.sleep(0.5)  # time for several periodic looks
    for _ in range(5):
        reply = await answer(socket, PING)
        assert reply["type"] == "websocket.send", "answered, not closed"
    assert socket.communicator.output_queue.empty()


# -- signed in however the project's middleware does it ------------------------------------------


@override_settings(**SOON)
async def test_revocation_deactivated_user_is_closed_4401(
    sockets: list[CommunicatorSocket],
) -> None:
    """A scope user without a session (a project's own middleware) is read again by id."""
    operator = await make_user("operator", "view_run")
    socket = await open_socket(sockets, operator)
    await deactivate(operator)
    assert (await closed(socket))["code"] == 4401


@override_settings(**SOON)
async def test_revocation_operator_losing_view_run_is_closed_4403(
    sockets: list[CommunicatorSocket],
) -> None:
    """An operator's socket gets everyone's runs in full: without view_run it is closed."""
    operator = await make_user("operator", "view_run")
    socket = await open_socket(sockets, operator)
    assert socket.snapshot["operator"] is True
    await revoke(operator, "view_run")
    close = await closed(socket)
    assert close["code"] == CLOSE_PERMISSION_LOST == 4403
    assert "django_weft.view_run" in close["reason"]


@override_settings(**NEVER)
async def test_revocation_an_abort_after_losing_the_permission_is_not_handled(
    sockets: list[CommunicatorSocket],
) -> None:
    """An operator who lost view_run and change_run: the abort frame closes the socket,
    the run is not asked to abort."""
    operator = await make_user("operator", "view_run", "change_run")
    run = await published_start("tests.noop")
    socket = await open_socket(sockets, operator)
    await revoke(operator, "view_run")
    await revoke(operator, "change_run")
    close = await answer(socket, {"type": "abort", "run": str(run.pk), "request_id": "a"})
    assert (close["type"], close["code"]) == ("websocket.close", 4403)
    await sync_to_async(run.refresh_from_db)()
    assert run.abort_requested_at is None


@override_settings(**NEVER)
async def test_revocation_each_frame_is_decided_on_permissions_as_they_are_now(
    sockets: list[CommunicatorSocket],
) -> None:
    """A starter who lost add_run keeps the socket (a guest's view needs nothing) but the
    next start is refused: the user is read again, not the one the socket opened with."""
    owner = await make_user("owner", "add_run")
    socket = await open_socket(sockets, owner)
    await socket.send({"type": "start", "job": "tests.noop", "request_id": "first"})
    assert (await socket.until(lambda f: f["type"] in ("started", "error")))["type"] == "started"
    await revoke(owner, "add_run")
    await socket.send({"type": "start", "job": "tests.noop", "request_id": "second"})
    refused = await socket.until(lambda f: f["type"] in ("started", "error"))
    assert (refused["type"], refused["code"]) == ("error", "forbidden")
    assert await sync_to_async(Run.objects.count)() == 1


@override_settings(**SOON, WEFT_DOCUMENT_ACCESS="django_weft.access.document_access")
async def test_revocation_losing_a_watched_document_is_closed_4403(
    sockets: list[CommunicatorSocket],
) -> None:
    """A socket watching a document its user may no longer watch is closed."""
    reader = await make_user("reader", "view_document")
    socket = await open_socket(sockets, reader)
    await socket.send({"type": "subscribe", "documents": ["shell:entries"]})
    await socket.until(lambda f: f["type"] == "document")
    await revoke(reader, "view_document")
    close = await closed(socket)
    assert close["code"] == 4403
    assert "document" in close["reason"]


@override_settings(**SOON, WEFT_LIVE_ALLOW_ANONYMOUS=True)
async def test_revocation_a_signed_out_visitors_socket_has_nothing_to_lose(
    sockets: list[CommunicatorSocket],
) -> None:
    """Where signed-out visitors may watch, their sockets are never closed for it."""
    socket = await open_socket(sockets, AnonymousUser())
    for _ in range(3):
        assert (await answer(socket, PING))["type"] == "websocket.send"


def policy_with_a_bug(user: Any, key: str) -> bool:
    """A WEFT_DOCUMENT_ACCESS that raises for users whose first name is "broken"."""
    if user.first_name == "broken":
        raise RuntimeError("the policy has a bug")
    return bool(user.is_authenticated)


@override_settings(**SOON, WEFT_DOCUMENT_ACCESS="tests.sockets.test_revocation.policy_with_a_bug")
async def test_revocation_a_look_that_fails_closes_the_socket_1011(
    sockets: list[CommunicatorSocket], caplog: pytest.LogCaptureFixture
) -> None:
    """A look that fails for another reason than the database would fail every time:
    the socket is closed (and the error logged) rather than left unwatched."""
    reader = await make_user("reader")
    socket = await open_socket(sockets, reader)
    await socket.send({"type": "subscribe", "documents": ["shell:entries"]})
    await socket.until(lambda f: f["type"] == "document")
    await sync_to_async(get_user_model().objects.filter(pk=reader.pk).update)(first_name="broken")
    assert (await closed(socket))["code"] == 1011
    assert "could not look at a live socket's user again" in caplog.text

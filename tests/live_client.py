"""Clients of the live socket for the tests.

In this process, through channels' ``WebsocketCommunicator`` (:func:`open_socket`), and
against a real ASGI server, through a real websocket signed in with a session cookie
(:func:`open_live`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from channels.testing import WebsocketCommunicator
from django.test import Client
from websockets.sync.client import ClientConnection, connect

from django_weft.sockets.consumers import RunsConsumer
from tests.patience import EVENTUALLY
from tests.processes import AsgiServer

Frame = dict[str, Any]


class CommunicatorSocket:
    """A connected communicator with helpers to wait for the frame a test expects."""

    def __init__(self, communicator: WebsocketCommunicator, snapshot: Frame) -> None:
        self.communicator = communicator
        self.snapshot = snapshot
        self.seen: list[Frame] = []

    async def send(self, frame: Frame | str) -> None:
        await self.communicator.send_to(
            text_data=frame if isinstance(frame, str) else json.dumps(frame)
        )

    async def next(self, timeout: float = EVENTUALLY) -> Frame:
        frame: Frame = await self.communicator.receive_json_from(timeout=timeout)
        self.seen.append(frame)
        return frame

    async def until(self, match: Callable[[Frame], bool], timeout: float = EVENTUALLY) -> Frame:
        while True:
            frame = await self.next(timeout)
            if match(frame):
                return frame

    async def close(self) -> None:
        await self.communicator.disconnect()


async def open_socket(opened: list[CommunicatorSocket], user: Any) -> CommunicatorSocket:
    """Connect a communicator as ``user``, past its snapshot; kept in ``opened`` to close."""
    communicator = WebsocketCommunicator(RunsConsumer.as_asgi(), "/ws/weft/runs/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect(timeout=EVENTUALLY)
    assert connected
    snapshot: Frame = await communicator.receive_json_from(timeout=EVENTUALLY)
    assert snapshot["type"] == "snapshot"
    socket = CommunicatorSocket(communicator, snapshot)
    opened.append(socket)
    return socket


def session_cookie(user: Any) -> str:
    """A ``Cookie`` header that signs ``user`` in, as a browser's would after logging in."""
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


class LiveSocket:
    """One open socket to ``ws/weft/runs/``, keeping every frame it received in ``seen``."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.seen: list[Frame] = []

    def send(self, frame: Frame) -> None:
        self.connection.send(json.dumps(frame))

    def next(self, timeout: float = EVENTUALLY) -> Frame:
        frame: Frame = json.loads(self.connection.recv(timeout=timeout))
        self.seen.append(frame)
        return frame

    def until(self, match: Callable[[Frame], bool], timeout: float = EVENTUALLY) -> Frame:
        """The first frame from now on that ``match`` accepts; fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            frame = self.next(max(0.1, deadline - time.monotonic()))
            if match(frame):
                return frame


@contextmanager
def open_live(server: AsgiServer, user: Any) -> Iterator[LiveSocket]:
    """A socket to ``server``'s live view as ``user``, closed when the block ends.

    Any answer to the handshake but 101 raises ``websockets.exceptions.InvalidStatus``.
    """
    with connect(
        server.url("/ws/weft/runs/", scheme="ws"),
        additional_headers={"Cookie": session_cookie(user)},
        open_timeout=EVENTUALLY,
    ) as connection:
        yield LiveSocket(connection)

"""A real websocket client of the live socket, signed in with a Django session cookie."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.test import Client
from websockets.sync.client import ClientConnection, connect

from tests.processes import AsgiServer

Frame = dict[str, Any]


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

    def next(self, timeout: float = 15) -> Frame:
        frame: Frame = json.loads(self.connection.recv(timeout=timeout))
        self.seen.append(frame)
        return frame

    def until(self, match: Callable[[Frame], bool], timeout: float = 15) -> Frame:
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
        open_timeout=15,
    ) as connection:
        yield LiveSocket(connection)

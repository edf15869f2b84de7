"""Serve the project's ASGI application from inside ``runjobs`` (``--http HOST:PORT``).

One process then holds the worker, the web server and the sockets, so the in-memory
channel layer carries run changes to the browser with no Redis at all: the way the
example project runs. With several processes use channels-redis instead and run the
ASGI server on its own (see docs/deployment.md).
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

logger = logging.getLogger("django_weft.serve")


class ServeRefused(Exception):
    """``--http`` cannot serve here; the message says why in one line, for the user."""


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``PORT`` (on 127.0.0.1); ValueError naming the problem otherwise."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f'"{text}" is not an address; use HOST:PORT, e.g. 127.0.0.1:8000')
    return host, int(port)


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``, or ServeRefused saying why not."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    # As uvicorn does: a restarted runjobs may take the port back from TIME_WAIT.
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen()
    except OSError as error:
        listener.close()
        raise ServeRefused(
            f"runjobs --http cannot listen on {host}:{port}: {error.strerror or error}"
        ) from None
    return listener


class AsgiServer:
    """uvicorn on a thread of its own, serving ``settings.ASGI_APPLICATION``.

    Everything that can refuse happens in the constructor, before the worker starts:
    uvicorn missing, no ``ASGI_APPLICATION`` or one that does not import, an address
    that cannot be listened on (taken, not this host's). The socket is bound here, not
    on uvicorn's thread, where a failure would only end that thread and leave the worker
    running without its pages.
    """

    def __init__(self, host: str, port: int) -> None:
        try:
            # An optional dependency (the ``http`` extra), imported only when asked for.
            import uvicorn
        except ImportError:
            raise ServeRefused(
                "runjobs --http needs uvicorn: pip install 'django-weft[http]'"
            ) from None
        path = getattr(settings, "ASGI_APPLICATION", None)
        if not path:
            raise ServeRefused(
                "runjobs --http needs settings.ASGI_APPLICATION, the import string of the "
                'project\'s ASGI application, e.g. "mysite.asgi.application"'
            )
        try:
            application: Any = import_string(path)
        except ImportError as error:
            raise ServeRefused(
                f'runjobs --http cannot import settings.ASGI_APPLICATION "{path}": {error}'
            ) from None
        self._socket = _listen(host, port)
        config = uvicorn.Config(
            application, host=host, port=port, lifespan="off", log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.address = f"http://{host}:{port}/"
        self._thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": [self._socket]},
            name="weft-http",
            daemon=True,
        )

    def start(self) -> None:
        self._thread.start()
        logger.info("serving %s on %s", settings.ASGI_APPLICATION, self.address)

    def stop(self) -> None:
        """Stop serving and close the socket, whether or not :meth:`start` was called."""
        if self._thread.is_alive():
            self.server.should_exit = True
            self._thread.join(10)
        self._socket.close()

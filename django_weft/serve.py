"""Serve the project's ASGI application from inside ``runjobs`` (``--http HOST:PORT``).

One process then holds the worker, the web server and the sockets, so the in-memory
channel layer carries run changes to the browser with no Redis at all: the way the
example project runs. With several processes use channels-redis instead and run the
ASGI server on its own (see docs/deployment.md).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

logger = logging.getLogger("django_weft.serve")


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``PORT`` (on 127.0.0.1); ValueError naming the problem otherwise."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f'"{text}" is not an address; use HOST:PORT, e.g. 127.0.0.1:8000')
    return host, int(port)


class AsgiServer:
    """uvicorn on a thread of its own, serving ``settings.ASGI_APPLICATION``."""

    def __init__(self, host: str, port: int) -> None:
        try:
            import uvicorn
        except ImportError as error:
            raise RuntimeError(
                "runjobs --http needs uvicorn: pip install 'django-weft[http]'"
            ) from error
        path = getattr(settings, "ASGI_APPLICATION", None)
        if not path:
            raise RuntimeError("runjobs --http needs settings.ASGI_APPLICATION")
        application: Any = import_string(path)
        config = uvicorn.Config(
            application, host=host, port=port, lifespan="off", log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.address = f"http://{host}:{port}/"
        self._thread = threading.Thread(target=self.server.run, name="weft-http", daemon=True)

    def start(self) -> None:
        self._thread.start()
        logger.info("serving %s on %s", settings.ASGI_APPLICATION, self.address)

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(10)

"""The ASGI application of ``compare.py``'s fan-out: weft's socket, every client a guest.

Served by ``uvicorn`` (a real server process) for ``weft_live``, whose settings
configure channels-redis and let anonymous sockets watch (``compare_settings.py``).
"""

from __future__ import annotations

from typing import Any

import compare_common

compare_common.configure()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (apps loaded)
from django.contrib.auth.models import AnonymousUser  # noqa: E402

from django_weft.sockets.routing import websocket_urlpatterns  # noqa: E402


class Anonymous:
    """Every socket is a guest without a session: no cookie, no session table."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        return await self.inner({**scope, "user": AnonymousUser()}, receive, send)


application = ProtocolTypeRouter({"websocket": Anonymous(URLRouter(websocket_urlpatterns))})

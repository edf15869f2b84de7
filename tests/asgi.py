"""The test project's ASGI application: Django over HTTP (with its static files, as
docs/live.md shows), weft's socket over websockets."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django_application = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs the apps loaded)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from django_weft.sockets.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # The admin's pages and the console's script, served as a project serves them in
        # development; browser tests read both.
        "http": ASGIStaticFilesHandler(django_application),
        "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
    }
)

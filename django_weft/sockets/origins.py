"""Which pages may open the live socket: the socket's own Origin check.

A browser sends the user's cookies with a websocket handshake whatever page opens it, so
a page of another site could read the user's runs (cross-site websocket hijacking)
unless the server looks at the handshake's ``Origin``. The consumer checks it itself, as
Django's CSRF check (``CsrfViewMiddleware._origin_verified``) checks a form's, so a
project that forgets an origin validator in its ASGI stack is still safe. An origin is a
scheme, a host and a port, compared whole:

- a handshake without ``Origin`` is not a browser's (browsers always send one) and is
  allowed;
- the socket's own origin is allowed: its ``Host`` (which must be one of
  ``ALLOWED_HOSTS``, with Django's defaults for ``DEBUG``; ``X-Forwarded-Host`` with
  ``USE_X_FORWARDED_HOST``) with the scheme the handshake came in on, ``ws`` as
  ``http`` and ``wss`` as ``https`` (or what ``SECURE_PROXY_SSL_HEADER`` says);
- an origin listed in ``CSRF_TRUSTED_ORIGINS`` is allowed, and so are the subdomains of
  an entry such as ``https://*.example.com``, for that scheme and port only.

``ALLOWED_HOSTS`` patterns alone admit no other origin: with ``[".example.com"]``,
``http://uploads.example.com:8080`` may not open a socket on ``https://www.example.com``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.utils.http import is_same_domain

#: The scheme of the page that may open a socket reached over each websocket scheme.
PAGE_SCHEMES = {"ws": "http", "wss": "https", "http": "http", "https": "https"}


def origin_allowed(scope: Mapping[str, Any]) -> bool:
    """Whether the websocket handshake in ``scope`` comes from a page allowed to open it."""
    origin = _header(scope, b"origin")
    if origin is None:
        return True
    return origin == own_origin(scope) or is_trusted_origin(origin)


def own_origin(scope: Mapping[str, Any]) -> str | None:
    """The socket's own origin, as Django computes a request's (None: a disallowed host).

    The handshake is read as Django reads an HTTP request of the same scope, so its
    host and scheme follow ``ALLOWED_HOSTS``, ``USE_X_FORWARDED_HOST`` and
    ``SECURE_PROXY_SSL_HEADER`` exactly as the project's pages do.
    """
    scheme = PAGE_SCHEMES.get(str(scope.get("scheme") or "ws"), "http")
    request = ASGIRequest({**scope, "method": "GET", "scheme": scheme}, io.BytesIO())
    try:
        host = request.get_host()
    except DisallowedHost:
        return None
    return f"{'https' if request.is_secure() else 'http'}://{host}"


def is_trusted_origin(origin: str) -> bool:
    """Whether ``CSRF_TRUSTED_ORIGINS`` lists ``origin`` (``scheme://host[:port]``).

    An entry names a whole origin, or with ``*`` every subdomain of one (the domain
    itself included), for the entry's scheme and port.
    """
    trusted = settings.CSRF_TRUSTED_ORIGINS
    if origin in (entry for entry in trusted if "*" not in entry):
        return True
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return False
    for entry in trusted:
        if "*" not in entry:
            continue
        pattern = urlsplit(entry)
        if pattern.scheme == parsed.scheme and is_same_domain(
            parsed.netloc, pattern.netloc.lstrip("*")
        ):
            return True
    return False


def _header(scope: Mapping[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None

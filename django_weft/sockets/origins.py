"""Which pages may open the live socket: the socket's own Origin check.

A browser sends the user's cookies with a websocket handshake whatever page opens it, so
a page of another site could read the user's runs (cross-site websocket hijacking)
unless the server looks at the handshake's ``Origin``. The consumer checks it itself,
with the rules Django and channels use for the same question, so a project that forgets
channels' ``AllowedHostsOriginValidator`` is still safe:

- a handshake without ``Origin`` is not a browser's (browsers always send one) and is
  allowed;
- an origin listed in ``CSRF_TRUSTED_ORIGINS`` (``https://*.example.com`` style wildcards
  included) is allowed;
- otherwise the origin's host must be one of ``ALLOWED_HOSTS`` (with Django's own
  defaults for ``DEBUG``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

#: What Django allows when ``DEBUG`` is on and ``ALLOWED_HOSTS`` is empty.
DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]


def origin_allowed(scope: Mapping[str, Any]) -> bool:
    """Whether the websocket handshake in ``scope`` comes from a page allowed to open it."""
    origin = _header(scope, b"origin")
    if origin is None:
        return True
    return is_trusted_origin(origin)


def is_trusted_origin(origin: str) -> bool:
    """Whether a page of ``origin`` (``scheme://host[:port]``) may open the live socket."""
    parsed = urlsplit(origin)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        return False
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        expected = urlsplit(trusted)
        if expected.scheme != parsed.scheme:
            continue
        if "*" in expected.netloc:
            if is_same_domain(parsed.netloc, expected.netloc.lstrip("*")):
                return True
        elif expected.netloc == parsed.netloc:
            return True
    host, _ = split_domain_port(parsed.netloc)
    allowed = settings.ALLOWED_HOSTS or (DEBUG_HOSTS if settings.DEBUG else [])
    return bool(host) and validate_host(host, allowed)


def _header(scope: Mapping[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None

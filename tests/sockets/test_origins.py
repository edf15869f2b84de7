"""Which pages may open the live socket (django_weft.sockets.origins), as Django's CSRF
check would decide for a form posted from the same page: scheme, host and port."""

from __future__ import annotations

from typing import Any

import pytest
from django.middleware.csrf import CsrfViewMiddleware
from django.test import RequestFactory, override_settings

from django_weft.sockets.origins import is_trusted_origin, origin_allowed, own_origin


def handshake(host: str | None, origin: str | None, scheme: str = "ws", **headers: str) -> Any:
    """The scope of a websocket handshake to ``host`` from a page of ``origin``."""
    sent = {"host": host, "origin": origin, **headers}
    return {
        "type": "websocket",
        "path": "/ws/weft/runs/",
        "scheme": scheme,
        "server": ("10.0.0.5", 8000),
        "headers": [
            (name.replace("_", "-").encode(), value.encode())
            for name, value in sent.items()
            if value is not None
        ],
    }


@override_settings(ALLOWED_HOSTS=[".example.com"], CSRF_TRUSTED_ORIGINS=[], DEBUG=False)
@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("https://www.example.com", True),
        ("http://uploads.example.com:8080", False),
        ("https://uploads.example.com", False),
        ("http://www.example.com", False),
        ("https://www.example.com:8443", False),
        ("https://www.example.com.evil.net", False),
        ("null", False),
    ],
)
def test_origin_allowed_hosts_wildcards_admit_no_other_origin(origin: str, allowed: bool) -> None:
    """A socket on https://www.example.com: only its own origin, whatever ALLOWED_HOSTS'
    wildcard would match; another scheme or port is another origin."""
    assert origin_allowed(handshake("www.example.com", origin, scheme="wss")) is allowed


@override_settings(ALLOWED_HOSTS=["weft.example"], CSRF_TRUSTED_ORIGINS=[])
def test_origin_scheme_is_the_handshakes() -> None:
    """ws:// is opened by http:// pages, wss:// by https:// pages; a port is part of the host."""
    assert own_origin(handshake("weft.example", None, scheme="ws")) == "http://weft.example"
    assert own_origin(handshake("weft.example", None, scheme="wss")) == "https://weft.example"
    assert own_origin(handshake("weft.example:8000", None)) == "http://weft.example:8000"
    assert not origin_allowed(handshake("weft.example", "https://weft.example", scheme="ws"))
    assert not origin_allowed(handshake("weft.example", "http://weft.example", scheme="wss"))


@override_settings(ALLOWED_HOSTS=[".example.com"], CSRF_TRUSTED_ORIGINS=[])
def test_origin_of_a_host_not_allowed_is_never_its_own() -> None:
    """A name pointed at the server (DNS rebinding) is not an allowed host: refused."""
    assert own_origin(handshake("evil.net", None)) is None
    assert not origin_allowed(handshake("evil.net", "http://evil.net"))


@override_settings(ALLOWED_HOSTS=["*"], CSRF_TRUSTED_ORIGINS=[])
def test_origin_any_host_allowed_still_admits_no_other_site() -> None:
    """ALLOWED_HOSTS = ["*"] answers any name, but a page of another site carrying the
    user's cookies opens a socket on this site's host, which is not its own origin."""
    assert not origin_allowed(handshake("www.example.com", "https://evil.example.net"))
    assert origin_allowed(handshake("www.example.com", "http://www.example.com"))


@override_settings(ALLOWED_HOSTS=[], DEBUG=True, CSRF_TRUSTED_ORIGINS=[])
def test_origin_rules_follow_djangos_debug_defaults() -> None:
    """With DEBUG and no ALLOWED_HOSTS, a localhost page opens its own localhost socket."""
    assert origin_allowed(handshake("localhost:8000", "http://localhost:8000"))
    assert origin_allowed(handshake("127.0.0.1:8000", "http://127.0.0.1:8000"))
    assert not origin_allowed(handshake("localhost:8000", "http://127.0.0.1:8000"))
    assert not origin_allowed(handshake("example.com", "http://example.com"))
    with override_settings(DEBUG=False):
        assert not origin_allowed(handshake("localhost:8000", "http://localhost:8000"))


@override_settings(
    ALLOWED_HOSTS=["weft.example"],
    SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
    USE_X_FORWARDED_HOST=True,
)
def test_origin_behind_a_proxy_follows_djangos_proxy_settings() -> None:
    """TLS ended at a proxy: the forwarded scheme and host are the socket's, as for pages."""
    forwarded = handshake(
        "10.0.0.5:8000", None, x_forwarded_proto="https", x_forwarded_host="weft.example"
    )
    assert own_origin(forwarded) == "https://weft.example"


@override_settings(
    ALLOWED_HOSTS=["app.example"],
    CSRF_TRUSTED_ORIGINS=["https://*.partner.example", "https://shop.example:8443"],
)
@pytest.mark.parametrize(
    ("origin", "trusted"),
    [
        ("https://a.partner.example", True),
        ("https://partner.example", True),
        ("http://a.partner.example", False),
        ("https://a.partner.example:8443", False),
        ("https://a.partner.example.evil.net", False),
        ("https://shop.example:8443", True),
        ("https://shop.example", False),
        ("http://shop.example:8443", False),
        ("http://[::1", False),
    ],
)
def test_trusted_origin_wildcards_match_subdomains_of_their_scheme_and_port(
    origin: str, trusted: bool
) -> None:
    """An entry trusts one origin, or with * its subdomains, for its scheme and port only."""
    assert is_trusted_origin(origin) is trusted
    assert origin_allowed(handshake("app.example", origin)) is trusted


def test_a_handshake_without_origin_is_not_a_browsers() -> None:
    """Browsers always send Origin on a websocket handshake; a script may not."""
    assert origin_allowed(handshake("app.example", None))


# -- the oracle: Django's own CSRF origin check ---------------------------------------------------

SETTINGS = [
    {"ALLOWED_HOSTS": [".example.com"], "CSRF_TRUSTED_ORIGINS": []},
    {"ALLOWED_HOSTS": ["www.example.com"], "CSRF_TRUSTED_ORIGINS": ["https://*.example.com"]},
    {"ALLOWED_HOSTS": ["*"], "CSRF_TRUSTED_ORIGINS": ["http://cdn.example.com:8080"]},
    {"ALLOWED_HOSTS": [], "DEBUG": True, "CSRF_TRUSTED_ORIGINS": []},
]
HOSTS = ["www.example.com", "www.example.com:8443", "localhost", "evil.net"]
ORIGINS = [
    "https://www.example.com",
    "http://www.example.com",
    "https://www.example.com:8443",
    "http://uploads.example.com:8080",
    "https://uploads.example.com",
    "http://cdn.example.com:8080",
    "http://localhost",
    "https://localhost",
    "https://evil.net",
    "null",
]


@pytest.mark.parametrize("configured", SETTINGS)
@pytest.mark.parametrize("scheme", ["ws", "wss"])
def test_origin_is_decided_as_djangos_csrf_check_decides(
    configured: dict[str, Any], scheme: str
) -> None:
    """Every host and origin: allowed exactly when Django would accept a POST from that page."""
    decided = {}
    expected = {}
    with override_settings(**{"DEBUG": False, **configured}):
        csrf: Any = CsrfViewMiddleware(lambda request: None)  # type: ignore[arg-type]
        for host in HOSTS:
            for origin in ORIGINS:
                request = RequestFactory().post(
                    "/", headers={"origin": origin}, HTTP_HOST=host, secure=scheme == "wss"
                )
                expected[host, origin] = csrf._origin_verified(request)
                decided[host, origin] = origin_allowed(handshake(host, origin, scheme=scheme))
    assert decided == expected
    assert any(expected.values()), "some pages are allowed"
    assert not all(expected.values()), "some are not"

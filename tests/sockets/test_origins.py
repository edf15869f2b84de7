"""Which pages may open the live socket (django_weft.sockets.origins), as Django would decide."""

from __future__ import annotations

import pytest
from django.test import override_settings

from django_weft.sockets.origins import is_trusted_origin, origin_allowed


@override_settings(ALLOWED_HOSTS=[], DEBUG=True, CSRF_TRUSTED_ORIGINS=[])
def test_origin_rules_follow_djangos_debug_defaults() -> None:
    """With DEBUG and no ALLOWED_HOSTS, localhost pages are trusted, as Django trusts them."""
    assert is_trusted_origin("http://localhost:8000")
    assert is_trusted_origin("http://127.0.0.1:8000")
    assert not is_trusted_origin("http://example.com")


@override_settings(ALLOWED_HOSTS=[".example.com"], DEBUG=False, CSRF_TRUSTED_ORIGINS=[])
@pytest.mark.parametrize(
    ("origin", "trusted"),
    [
        ("https://example.com", True),
        ("https://shop.example.com:8443", True),
        ("https://example.com.evil.net", False),
        ("ftp://example.com", False),
        ("https://", False),
    ],
)
def test_origin_host_must_be_an_allowed_host(origin: str, trusted: bool) -> None:
    """ALLOWED_HOSTS' own patterns decide for an origin's host; only http(s) pages count."""
    assert is_trusted_origin(origin) is trusted


@override_settings(
    ALLOWED_HOSTS=["app.example"], CSRF_TRUSTED_ORIGINS=["https://*.partner.example"]
)
def test_trusted_origin_wildcards_match_subdomains_of_their_scheme() -> None:
    """A wildcard entry trusts its subdomains, for the scheme it names only."""
    assert is_trusted_origin("https://a.partner.example")
    assert not is_trusted_origin("http://a.partner.example")


def test_a_handshake_without_origin_is_not_a_browsers() -> None:
    """Browsers always send Origin on a websocket handshake; a script may not."""
    assert origin_allowed({"headers": [(b"host", b"app.example")]})

"""The system checks of the metrics' and health views' settings, E070-E073, as
``manage.py check`` reports them (E071, prometheus_client missing: test_metrics.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.checks import run_checks
from django.test import override_settings


def observe_messages() -> list[Any]:
    return [
        message
        for message in run_checks()
        if message.id in {f"django_weft.E07{digit}" for digit in range(10)}
    ]


@pytest.mark.django_db
def test_observe_checks_pass_with_the_test_settings() -> None:
    """A token of 24 characters and the default health settings: nothing to report."""
    assert observe_messages() == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("token", "shown"),
    [
        ("short", "a string"),
        (" tests-only-metrics-token", "a string"),
        (12345678901234567, "12345678901234567"),
    ],
)
def test_metrics_token_must_be_a_long_string(token: object, shown: str) -> None:
    """E070: too short, padded with spaces, not a string; the message never prints a
    string token (it is a secret)."""
    with override_settings(WEFT_METRICS_TOKEN=token):
        (message,) = observe_messages()
    assert message.id == "django_weft.E070"
    assert message.msg == (
        "WEFT_METRICS_TOKEN must be None or a string of at least 16 characters with no "
        f"surrounding spaces, not {shown}."
    )
    assert "secrets.token_urlsafe" in message.hint


@pytest.mark.django_db
def test_metrics_token_none_is_fine() -> None:
    """No token: only signed-in operators read the metrics, which is allowed."""
    with override_settings(WEFT_METRICS_TOKEN=None):
        assert observe_messages() == []


@pytest.mark.django_db
@pytest.mark.parametrize("stale", [0, -5, "60", True, 1.0])
def test_loop_stale_must_exceed_the_loops_longest_sleep(stale: object) -> None:
    """E072: not a positive number, or no longer than the loop sleeps (1 s: the poll
    interval, shorter than the 5 s heartbeat), which would fail a healthy idle worker."""
    with override_settings(WEFT_HEALTH_LOOP_STALE=stale, WEFT_POLL_INTERVAL=1.0):
        (message,) = observe_messages()
    assert message.id == "django_weft.E072"
    assert message.msg == (
        "WEFT_HEALTH_LOOP_STALE must be a number of seconds greater than the worker loop's "
        "longest sleep (1s, the shorter of WEFT_POLL_INTERVAL and WEFT_HEARTBEAT_INTERVAL), "
        f"not {stale!r}."
    )


@pytest.mark.django_db
@pytest.mark.parametrize("timeout", [0, "2", None])
def test_health_timeout_must_be_positive(timeout: object) -> None:
    """E073: the readiness view's wait for the channel layer is a positive number."""
    with override_settings(WEFT_HEALTH_TIMEOUT=timeout):
        (message,) = observe_messages()
    assert message.id == "django_weft.E073"
    assert message.msg == (
        f"WEFT_HEALTH_TIMEOUT must be a positive number of seconds, not {timeout!r}."
    )

"""System checks of the metrics' and health views' settings (E070-E073)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from django.core.checks import CheckMessage, Error, register

from django_weft.conf import weft_settings

#: The shortest ``WEFT_METRICS_TOKEN`` accepted: a token is a secret, not a password.
TOKEN_MIN_LENGTH = 16


def metrics_installed() -> bool:
    """Whether prometheus_client (the ``metrics`` extra) can be imported here."""
    try:
        importlib.import_module("prometheus_client")
    except ImportError:
        return False
    return True


def _seconds(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


@register()
def check_observe_settings(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    token = weft_settings.raw("WEFT_METRICS_TOKEN")
    if token is not None and (
        not isinstance(token, str) or len(token) < TOKEN_MIN_LENGTH or token != token.strip()
    ):
        shown = "a string" if isinstance(token, str) else repr(token)
        messages.append(
            Error(
                f"WEFT_METRICS_TOKEN must be None or a string of at least {TOKEN_MIN_LENGTH} "
                f"characters with no surrounding spaces, not {shown}.",
                hint="Make one: python -c 'import secrets; print(secrets.token_urlsafe())'",
                id="django_weft.E070",
            )
        )
    if token is not None and not metrics_installed():
        messages.append(
            Error(
                "WEFT_METRICS_TOKEN is set, but prometheus_client is not installed.",
                hint="pip install 'django-weft[metrics]'",
                id="django_weft.E071",
            )
        )
    stale = weft_settings.raw("WEFT_HEALTH_LOOP_STALE")
    poll = weft_settings.raw("WEFT_POLL_INTERVAL")
    beat = weft_settings.raw("WEFT_HEARTBEAT_INTERVAL")
    # The loop sleeps up to the shorter of the two between turns; E005 judges them.
    longest_sleep = min(poll, beat) if _seconds(poll) and _seconds(beat) else 0
    if not _seconds(stale) or stale <= longest_sleep:
        messages.append(
            Error(
                "WEFT_HEALTH_LOOP_STALE must be a number of seconds greater than the worker "
                f"loop's longest sleep ({longest_sleep:g}s, the shorter of WEFT_POLL_INTERVAL "
                f"and WEFT_HEARTBEAT_INTERVAL), not {stale!r}.",
                id="django_weft.E072",
            )
        )
    timeout = weft_settings.raw("WEFT_HEALTH_TIMEOUT")
    if not _seconds(timeout):
        messages.append(
            Error(
                f"WEFT_HEALTH_TIMEOUT must be a positive number of seconds, not {timeout!r}.",
                id="django_weft.E073",
            )
        )
    return messages

"""System checks of the worker's own connections: its timeouts, liveness and LISTEN.

Beside the engine rather than in :mod:`django_weft.checks`, which calls them, because
they judge the connections the engine opens (:mod:`~django_weft.jobs.connections`,
:mod:`~django_weft.engine.worker.liveness`, :mod:`~django_weft.engine.database.notify`), each the
value as set (``weft_settings.raw``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error
from django.db import DEFAULT_DB_ALIAS

from django_weft.conf import weft_settings


def connection_problems() -> list[CheckMessage]:
    """The statement and lock timeouts (E013), the liveness (E014) and LISTEN connections
    (E015, E016)."""
    return [*_timeout_problems(), *_liveness_problems(), *_listen_problems()]


def _timeout_problems() -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    for name in ("WEFT_STATEMENT_TIMEOUT", "WEFT_LOCK_TIMEOUT"):
        value = weft_settings.raw(name)
        if value is None:
            continue
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0.001:
            messages.append(
                Error(
                    f"{name} must be a number of seconds of at least 0.001, or None to keep "
                    f"the server's own setting, not {value!r}.",
                    id="django_weft.E013",
                )
            )
    return messages


def _is_alias(value: Any) -> bool:
    return isinstance(value, str) and value in settings.DATABASES


def _known_aliases() -> str:
    return ", ".join(repr(name) for name in settings.DATABASES)


def _liveness_problems() -> list[CheckMessage]:
    alias = weft_settings.raw("WEFT_LIVENESS_DATABASE")
    if alias is None or _is_alias(alias):
        return []
    return [
        Error(
            f"WEFT_LIVENESS_DATABASE must name a database of DATABASES ({_known_aliases()}), "
            f"or be None to leave liveness to the heartbeat, not {alias!r}.",
            id="django_weft.E014",
        )
    ]


def _is_postgresql(alias: str) -> bool:
    return "postgresql" in str(settings.DATABASES[alias].get("ENGINE", ""))


def _listen_problems() -> list[CheckMessage]:
    alias = weft_settings.raw("WEFT_LISTEN_DATABASE")
    if alias is None:
        return []
    if not _is_alias(alias):
        return [
            Error(
                f"WEFT_LISTEN_DATABASE must name a database of DATABASES ({_known_aliases()}), "
                f"or be None to listen to nothing (workers poll), not {alias!r}.",
                id="django_weft.E015",
            )
        ]
    if _is_postgresql(DEFAULT_DB_ALIAS) and not _is_postgresql(alias):
        engine = settings.DATABASES[alias].get("ENGINE")
        return [
            Error(
                f"WEFT_LISTEN_DATABASE = {alias!r} is a {engine} database: LISTEN needs a "
                "PostgreSQL connection to the workers' database "
                f"(DATABASES[{DEFAULT_DB_ALIAS!r}]).",
                hint="Name an alias that connects to the same PostgreSQL database directly, "
                "or None to poll.",
                id="django_weft.E016",
            )
        ]
    return []

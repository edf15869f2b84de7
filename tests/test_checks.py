"""Tests for the system checks of the ``WEFT_*`` settings (django_weft/checks.py).

Each check id is triggered through ``override_settings`` and read back from
``run_checks()``, as ``manage.py check`` would report it; the message must name the
setting and the bad value.
"""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest
from django.conf import settings
from django.core.checks import Error, Warning, run_checks
from django.db import connection
from django.test import modify_settings, override_settings

from django_weft import checks
from django_weft.conf import WeftSettings
from django_weft.timing.clocks import SystemClock


def weft_messages() -> list[Any]:
    """The messages of every registered check that come from django_weft."""
    return [m for m in run_checks() if (m.id or "").startswith("django_weft.")]


def only(check_id: str) -> list[Any]:
    """The weft messages with ``check_id``, after checking no other weft id was reported."""
    messages = weft_messages()
    assert {message.id for message in messages} == {check_id}, messages
    return messages


@pytest.mark.django_db
def test_checks_default_settings() -> None:
    """The test settings (SQLite in IMMEDIATE mode, or PostgreSQL) report no weft message."""
    assert weft_messages() == []


@pytest.mark.django_db
@override_settings()
def test_checks_unset_settings() -> None:
    """With no WEFT_* setting at all, the defaults pass every check."""
    for name in WeftSettings.declared():
        if hasattr(settings, name):
            delattr(settings, name)
    assert weft_messages() == []


# --- E001 WEFT_CLOCK -------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("no.such.Clock", "cannot be imported"),
        ("nodots", "cannot be imported"),
        ("django_weft.models.Schedule", "not a subclass of django_weft.timing.clocks.Clock"),
        (
            "django_weft.timing.clocks.load_clock",
            "not a subclass of django_weft.timing.clocks.Clock",
        ),
    ],
)
def test_checks_clock_invalid(value: str, says: str) -> None:
    """E001: a WEFT_CLOCK that cannot be imported or is not a Clock is an error naming it."""
    with override_settings(WEFT_CLOCK=value):
        (message,) = only("django_weft.E001")
    assert isinstance(message, Error)
    assert "WEFT_CLOCK" in message.msg
    assert repr(value) in message.msg
    assert says in message.msg


@pytest.mark.django_db
@pytest.mark.parametrize("value", [None, SystemClock, 5], ids=["none", "class", "int"])
def test_checks_clock_not_a_string(value: object) -> None:
    """E001: a WEFT_CLOCK that is not an import string is an error naming it, not a crash."""
    with override_settings(WEFT_CLOCK=value):
        (message,) = only("django_weft.E001")
    assert "WEFT_CLOCK" in message.msg
    assert repr(value) in message.msg
    assert "import string" in message.msg


@pytest.mark.django_db
@override_settings(WEFT_CLOCK="django_weft.testing.DrivenClock")
def test_checks_clock_driven() -> None:
    """E001 is not raised for the driven clock, a Clock subclass."""
    assert weft_messages() == []


# --- E002 WEFT_EXECUTOR ----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("no.such.Executor", "cannot be imported"),
        (
            "django_weft.timing.clocks.SystemClock",
            "not a subclass of django_weft.engine.executors.Executor",
        ),
    ],
)
def test_checks_executor_invalid(value: str, says: str) -> None:
    """E002: a WEFT_EXECUTOR that cannot be imported or is not an Executor is an error naming it."""
    with override_settings(WEFT_EXECUTOR=value):
        (message,) = only("django_weft.E002")
    assert isinstance(message, Error)
    assert "WEFT_EXECUTOR" in message.msg
    assert repr(value) in message.msg
    assert says in message.msg


@pytest.mark.django_db
@override_settings(WEFT_EXECUTOR=None)
def test_checks_executor_not_a_string() -> None:
    """E002: a WEFT_EXECUTOR that is not an import string is an error naming it, not a crash."""
    (message,) = only("django_weft.E002")
    assert "WEFT_EXECUTOR" in message.msg
    assert "None" in message.msg


# --- E003 WEFT_CONCURRENCY -------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("value", [0, -2, "4", 2.5, True, None])
def test_checks_concurrency_invalid(value: object) -> None:
    """E003: a WEFT_CONCURRENCY that is not a positive integer is an error naming it."""
    with override_settings(WEFT_CONCURRENCY=value):
        (message,) = only("django_weft.E003")
    assert "WEFT_CONCURRENCY" in message.msg
    assert repr(value) in message.msg


@pytest.mark.django_db
@override_settings(WEFT_CONCURRENCY=1)
def test_checks_concurrency_one() -> None:
    """E003 is not raised for a concurrency of 1."""
    assert weft_messages() == []


# --- E004 WEFT_GRACE / WEFT_CATCH_UP_WINDOW ----------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["WEFT_GRACE", "WEFT_CATCH_UP_WINDOW"])
@pytest.mark.parametrize("value", [timedelta(seconds=-1), 300, "5m", None])
def test_checks_timedelta_invalid(name: str, value: object) -> None:
    """E004: a grace or catch-up window that is not a timedelta >= 0 is an error naming it."""
    with override_settings(**{name: value}):
        (message,) = only("django_weft.E004")
    assert name in message.msg
    assert repr(value) in message.msg


@pytest.mark.django_db
@override_settings(WEFT_GRACE=timedelta(0), WEFT_CATCH_UP_WINDOW=timedelta(0))
def test_checks_timedelta_zero() -> None:
    """E004 is not raised for a zero grace or window (no lateness allowed)."""
    assert weft_messages() == []


# --- E005 seconds settings ---------------------------------------------------------------------

SECONDS = [
    "WEFT_POLL_INTERVAL",
    "WEFT_SHUTDOWN_GRACE",
    "WEFT_HEARTBEAT_INTERVAL",
    "WEFT_LOST_AFTER",
    "WEFT_ABORT_POLL_INTERVAL",
    "WEFT_TIMEOUT_GRACE",
    "WEFT_LIVE_RECHECK_INTERVAL",
]


@pytest.mark.django_db
@pytest.mark.parametrize("name", SECONDS)
@pytest.mark.parametrize("value", [0, -1.5, "5", False, timedelta(seconds=5)])
def test_checks_seconds_invalid(name: str, value: object) -> None:
    """E005: a seconds setting that is not a positive number is an error naming it."""
    with override_settings(**{name: value}):
        (message,) = only("django_weft.E005")
    assert name in message.msg
    assert repr(value) in message.msg


# --- E006 WEFT_LOST_AFTER vs WEFT_HEARTBEAT_INTERVAL -------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("lost_after", "heartbeat"), [(10, 5), (9.5, 5), (3, 5)])
def test_checks_lost_after_too_short(lost_after: float, heartbeat: float) -> None:
    """E006: WEFT_LOST_AFTER <= 2 x WEFT_HEARTBEAT_INTERVAL is an error naming both values."""
    with override_settings(WEFT_LOST_AFTER=lost_after, WEFT_HEARTBEAT_INTERVAL=heartbeat):
        (message,) = only("django_weft.E006")
    assert "WEFT_LOST_AFTER" in message.msg
    assert "WEFT_HEARTBEAT_INTERVAL" in message.msg
    assert f"{float(lost_after)}s" in message.msg
    assert f"{float(heartbeat)}s" in message.msg


@pytest.mark.django_db
@override_settings(WEFT_LOST_AFTER=10.5, WEFT_HEARTBEAT_INTERVAL=5)
def test_checks_lost_after_just_enough() -> None:
    """E006 is not raised once WEFT_LOST_AFTER is more than twice the heartbeat interval."""
    assert weft_messages() == []


# --- W001 SQLite without IMMEDIATE transactions ----------------------------------------------


def sqlite_check(
    monkeypatch: pytest.MonkeyPatch, databases: dict[str, Any], vendors: dict[str, str]
) -> list[Any]:
    """check_sqlite_transactions() over made-up DATABASES whose connections have ``vendors``."""
    monkeypatch.setattr(checks, "settings", SimpleNamespace(DATABASES=databases))
    monkeypatch.setattr(
        checks,
        "connections",
        {alias: SimpleNamespace(vendor=vendor) for alias, vendor in vendors.items()},
    )
    return checks.check_sqlite_transactions()


@pytest.mark.parametrize(
    "options",
    [{}, {"transaction_mode": "DEFERRED"}, {"transaction_mode": "EXCLUSIVE"}, {"timeout": 30}],
    ids=["no-options", "deferred", "exclusive", "timeout-only"],
)
def test_checks_sqlite_without_immediate(
    monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    """W001: a SQLite database not in IMMEDIATE transaction mode is warned about, by alias."""
    databases = {"legacy": {"ENGINE": "django.db.backends.sqlite3", "OPTIONS": options}}
    (message,) = sqlite_check(monkeypatch, databases, {"legacy": "sqlite"})
    assert isinstance(message, Warning)
    assert message.id == "django_weft.W001"
    assert '"legacy"' in message.msg
    assert "transaction_mode" in message.msg
    assert "IMMEDIATE" in message.msg
    assert "IMMEDIATE" in (message.hint or "")


@pytest.mark.parametrize("mode", ["IMMEDIATE", "immediate"])
def test_checks_sqlite_immediate(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """W001 is not raised for a SQLite database in IMMEDIATE mode, however it is spelled."""
    databases = {"default": {"OPTIONS": {"transaction_mode": mode}}}
    assert sqlite_check(monkeypatch, databases, {"default": "sqlite"}) == []


def test_checks_sqlite_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """W001 is about SQLite only: another database without the option is not warned about."""
    databases: dict[str, Any] = {"default": {"OPTIONS": {}}, "cache": {}}
    messages = sqlite_check(monkeypatch, databases, {"default": "postgresql", "cache": "sqlite"})
    assert [message.msg for message in messages] == [
        'Database "cache" is SQLite without "transaction_mode": "IMMEDIATE".'
    ]


@pytest.mark.django_db
def test_checks_sqlite_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """W001 is reported by run_checks() for the real default database once IMMEDIATE is dropped."""
    if connection.vendor != "sqlite":
        options: dict[str, Any] = {}
        monkeypatch.setattr(checks, "connections", {"default": SimpleNamespace(vendor="sqlite")})
    else:
        options = {**cast(dict[str, Any], settings.DATABASES["default"]["OPTIONS"])}
        options.pop("transaction_mode")
    monkeypatch.setattr(
        checks,
        "settings",
        SimpleNamespace(USE_TZ=True, DATABASES={"default": {"OPTIONS": options}}),
    )
    (message,) = only("django_weft.W001")
    assert '"default"' in message.msg


# --- E007 / E008 live settings ---------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("WEFT_LIVE_RECENT_RUNS", -1),
        ("WEFT_LIVE_RECENT_RUNS", "20"),
        ("WEFT_LIVE_MAX_FRAME", 0),
        ("WEFT_LIVE_SNAPSHOT_LIMIT", 0),
        ("WEFT_LIVE_SNAPSHOT_LIMIT", True),
        ("WEFT_LIVE_MAX_SUBSCRIPTIONS", 0),
        ("WEFT_LIVE_MAX_SUBSCRIPTIONS", 2.5),
    ],
)
def test_checks_live_numbers_invalid(name: str, value: object) -> None:
    """E007: live-view sizes that are not whole numbers in range are errors naming them."""
    with override_settings(**{name: value}):
        (message,) = only("django_weft.E007")
    assert name in message.msg
    assert repr(value) in message.msg


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("no.such.policy", "cannot be imported"),
        ("django_weft.conf.weft_settings", "not an import string of a callable"),
        (None, "None"),
    ],
)
def test_checks_document_access_invalid(value: object, says: str) -> None:
    """E008: a WEFT_DOCUMENT_ACCESS that is not an importable callable is an error naming it."""
    with override_settings(WEFT_DOCUMENT_ACCESS=value):
        (message,) = only("django_weft.E008")
    assert "WEFT_DOCUMENT_ACCESS" in message.msg
    assert says in message.msg


@pytest.mark.django_db
@override_settings(USE_TZ=False)
def test_checks_use_tz_off() -> None:
    """E009: USE_TZ = False is an error; moments are stored aware in UTC."""
    (message,) = only("django_weft.E009")
    assert "USE_TZ" in message.msg


# --- E010 / E011 pruning ----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["WEFT_PRUNE_AFTER", "WEFT_PRUNE_INTERVAL"])
@pytest.mark.parametrize("value", [timedelta(0), timedelta(days=-1), 30, "30d"])
def test_checks_prune_durations_invalid(name: str, value: object) -> None:
    """E010: a pruning age or interval that is not a positive timedelta is an error naming it."""
    with override_settings(**{name: value}):
        (message,) = only("django_weft.E010")
    assert name in message.msg
    assert repr(value) in message.msg


@pytest.mark.django_db
def test_checks_prune_interval_is_not_optional() -> None:
    """E010: pruning may be off (WEFT_PRUNE_AFTER = None), its interval may not be None."""
    with override_settings(WEFT_PRUNE_AFTER=None):
        assert weft_messages() == []
    with override_settings(WEFT_PRUNE_INTERVAL=None):
        (message,) = only("django_weft.E010")
    assert "WEFT_PRUNE_INTERVAL must be a positive timedelta, not None" in message.msg


@pytest.mark.django_db
@pytest.mark.parametrize("value", [0, -5, 2.5, "1000", True])
def test_checks_prune_batch_size_invalid(value: object) -> None:
    """E011: a batch size that is not a positive whole number is an error naming it."""
    with override_settings(WEFT_PRUNE_BATCH_SIZE=value):
        (message,) = only("django_weft.E011")
    assert "WEFT_PRUNE_BATCH_SIZE" in message.msg
    assert repr(value) in message.msg


# --- E013 / E014 the worker's timeouts and liveness connection --------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["WEFT_STATEMENT_TIMEOUT", "WEFT_LOCK_TIMEOUT"])
@pytest.mark.parametrize("value", [0, -1, 0.0001, "5", True, timedelta(seconds=5)])
def test_checks_worker_timeout_invalid(name: str, value: object) -> None:
    """E013: a statement or lock timeout that is not at least a millisecond (or None) is an
    error naming the setting and the value."""
    with override_settings(**{name: value}):
        (message,) = only("django_weft.E013")
    assert name in message.msg
    assert repr(value) in message.msg
    assert "or None" in message.msg


@pytest.mark.django_db
@override_settings(WEFT_STATEMENT_TIMEOUT=None, WEFT_LOCK_TIMEOUT=0.5)
def test_checks_worker_timeouts_off_or_short() -> None:
    """E013 is not raised for None (the server's own setting) or half a second."""
    assert weft_messages() == []


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["replica", "", ["default"], 1])
def test_checks_liveness_database_unknown(value: object) -> None:
    """E014: a WEFT_LIVENESS_DATABASE that names no database of DATABASES is an error
    naming the value and the aliases there are."""
    with override_settings(WEFT_LIVENESS_DATABASE=value):
        (message,) = only("django_weft.E014")
    assert repr(value) in message.msg
    assert "'default'" in message.msg


@pytest.mark.django_db
@override_settings(WEFT_LIVENESS_DATABASE=None)
def test_checks_liveness_database_off() -> None:
    """E014 is not raised for None: liveness by the heartbeat alone."""
    assert weft_messages() == []


# --- E060 where each queue's runs execute ------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "value", [["cpu"], {"cpu": "fork"}, {"cpu": None}, {1: "process"}, "process"]
)
def test_checks_queue_executors_invalid(value: object) -> None:
    """E060: WEFT_QUEUE_EXECUTORS must map queue names to "thread" or "process"; the
    message names the setting, the accepted values and the value."""
    with override_settings(WEFT_QUEUE_EXECUTORS=value):
        (message,) = only("django_weft.E060")
    assert 'WEFT_QUEUE_EXECUTORS must map queue names to "thread" or "process"' in message.msg
    assert repr(value) in message.msg


@pytest.mark.django_db
@override_settings(WEFT_QUEUE_EXECUTORS={"cpu": "process", "io": "thread"})
def test_checks_queue_executors_valid() -> None:
    """E060 is not raised for queues mapped to either executor."""
    assert weft_messages() == []


# --- E015 / E016 the LISTEN connection ------------------------------------------------------

POSTGRES = {"ENGINE": "django.db.backends.postgresql", "NAME": "weft"}
SQLITE = {"ENGINE": "django.db.backends.sqlite3", "NAME": "weft.sqlite3"}


def listen_messages(databases: dict[str, dict[str, str]], alias: str) -> list[Any]:
    """The LISTEN checks' messages for made-up ``DATABASES`` (never connected to).

    Django warns that overriding DATABASES does not reconnect: nothing connects here, the
    settings check only reads them (other checks would open the made-up aliases, so this
    one is called by itself).
    """
    with (
        pytest.warns(UserWarning, match="Overriding setting DATABASES"),
        override_settings(DATABASES=databases, WEFT_LISTEN_DATABASE=alias),
    ):
        messages = checks.check_settings()
    return [m for m in messages if m.id in {"django_weft.E015", "django_weft.E016"}]


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["direct", "", ["default"], 1])
def test_checks_listen_database_unknown(value: object) -> None:
    """E015: a WEFT_LISTEN_DATABASE that names no database of DATABASES is an error
    naming the value and the aliases there are."""
    with override_settings(WEFT_LISTEN_DATABASE=value):
        (message,) = only("django_weft.E015")
    assert repr(value) in message.msg
    assert "'default'" in message.msg
    assert "or be None" in message.msg


@pytest.mark.django_db
@override_settings(WEFT_LISTEN_DATABASE=None)
def test_checks_listen_database_off() -> None:
    """E015 is not raised for None: no LISTEN, the workers poll."""
    assert weft_messages() == []


def test_checks_listen_database_not_postgresql() -> None:
    """E016: workers on PostgreSQL that would LISTEN on an alias of another engine get an
    error naming the alias and its engine."""
    (message,) = listen_messages({"default": POSTGRES, "direct": SQLITE}, "direct")
    assert message.id == "django_weft.E016"
    assert "'direct'" in message.msg
    assert "django.db.backends.sqlite3" in message.msg


def test_checks_listen_database_direct_postgresql() -> None:
    """E016 is not raised for a PostgreSQL alias beside a pooled PostgreSQL default, nor
    where the workers' database is not PostgreSQL (they never listen)."""
    direct = {**POSTGRES, "PORT": "6432"}
    assert listen_messages({"default": POSTGRES, "direct": direct}, "direct") == []
    assert listen_messages({"default": SQLITE, "direct": POSTGRES}, "direct") == []
    assert listen_messages({"default": SQLITE, "direct": SQLITE}, "direct") == []


# --- W003 the API's pages without their files --------------------------------------------


@pytest.mark.django_db
def test_checks_api_pages_without_the_sidecar() -> None:
    """W003: the project mounts weft's Swagger UI and Redoc without drf_spectacular_sidecar."""
    with modify_settings(INSTALLED_APPS={"remove": ["drf_spectacular_sidecar"]}):
        (message,) = only("django_weft.W003")
        assert isinstance(message, Warning)
        assert "drf-spectacular-sidecar" in message.msg
        assert message.hint == 'Add "drf_spectacular_sidecar" to INSTALLED_APPS.'
        with override_settings(ROOT_URLCONF="example_project.urls"):
            assert [m.id for m in weft_messages()] == ["django_weft.W003"]
        with override_settings(ROOT_URLCONF="tests.test_checks"):
            assert weft_messages() == [], "the pages are not mounted: nothing to say"


@pytest.mark.django_db
def test_checks_api_pages_with_no_urls_at_all(settings: Any) -> None:
    """A worker's settings may have no ROOT_URLCONF: W003 says nothing, and never raises."""
    del settings.ROOT_URLCONF
    with modify_settings(INSTALLED_APPS={"remove": ["drf_spectacular_sidecar"]}):
        assert "django_weft.W003" not in {m.id for m in weft_messages()}


#: A URLconf without weft's API (``ROOT_URLCONF = "tests.test_checks"`` above).
urlpatterns: list[Any] = []

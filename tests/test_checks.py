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
@override_settings()
def test_checks_unset_settings() -> None:
    """With no WEFT_* setting at all, the defaults pass every check."""
    for name in WeftSettings.declared():
        if hasattr(settings, name):
            delattr(settings, name)
    assert weft_messages() == []


# --- one setting refused, one id reported -------------------------------------------------

SECONDS = [
    "WEFT_POLL_INTERVAL",
    "WEFT_SHUTDOWN_GRACE",
    "WEFT_HEARTBEAT_INTERVAL",
    "WEFT_LOST_AFTER",
    "WEFT_ABORT_POLL_INTERVAL",
    "WEFT_TIMEOUT_GRACE",
    "WEFT_LIVE_RECHECK_INTERVAL",
]
NOT_A_CLOCK = "not a subclass of django_weft.timing.clocks.Clock"
NOT_AN_EXECUTOR = "not a subclass of django_weft.engine.worker.executors.Executor"

REFUSED: list[tuple[str, list[str], list[object], tuple[str, ...]]] = [
    # (check id, the settings, values each of them refuses, what the message says besides)
    # E001: a WEFT_CLOCK that cannot be imported, is not a Clock, or is no import string.
    ("E001", ["WEFT_CLOCK"], ["no.such.Clock", "nodots"], ("cannot be imported",)),
    ("E001", ["WEFT_CLOCK"], ["django_weft.models.Schedule"], (NOT_A_CLOCK,)),
    ("E001", ["WEFT_CLOCK"], ["django_weft.timing.clocks.load_clock"], (NOT_A_CLOCK,)),
    ("E001", ["WEFT_CLOCK"], [None, SystemClock, 5], ("import string",)),
    # E002: likewise WEFT_EXECUTOR and Executor.
    ("E002", ["WEFT_EXECUTOR"], ["no.such.Executor"], ("cannot be imported",)),
    ("E002", ["WEFT_EXECUTOR"], ["django_weft.timing.clocks.SystemClock"], (NOT_AN_EXECUTOR,)),
    ("E002", ["WEFT_EXECUTOR"], [None], ()),
    # E003: a concurrency that is not a positive integer.
    ("E003", ["WEFT_CONCURRENCY"], [0, -2, "4", 2.5, True, None], ()),
    # E004: a grace or catch-up window that is not a timedelta >= 0.
    (
        "E004",
        ["WEFT_GRACE", "WEFT_CATCH_UP_WINDOW"],
        [timedelta(seconds=-1), 300, "5m", None],
        (),
    ),
    # E005: a seconds setting that is not a positive number.
    ("E005", SECONDS, [0, -1.5, "5", False, timedelta(seconds=5)], ()),
    # E007: live-view sizes that are not whole numbers in range.
    ("E007", ["WEFT_LIVE_RECENT_RUNS"], [-1, "20"], ()),
    ("E007", ["WEFT_LIVE_MAX_FRAME"], [0], ()),
    ("E007", ["WEFT_LIVE_SNAPSHOT_LIMIT"], [0, True], ()),
    ("E007", ["WEFT_LIVE_MAX_SUBSCRIPTIONS"], [0, 2.5], ()),
    # E008: a WEFT_DOCUMENT_ACCESS that is not an importable callable.
    ("E008", ["WEFT_DOCUMENT_ACCESS"], ["no.such.policy"], ("cannot be imported",)),
    (
        "E008",
        ["WEFT_DOCUMENT_ACCESS"],
        ["django_weft.conf.weft_settings"],
        ("not an import string of a callable",),
    ),
    ("E008", ["WEFT_DOCUMENT_ACCESS"], [None], ()),
    # E010: a pruning age or interval that is not a positive timedelta.
    (
        "E010",
        ["WEFT_PRUNE_AFTER", "WEFT_PRUNE_INTERVAL"],
        [timedelta(0), timedelta(days=-1), 30, "30d"],
        (),
    ),
    # E011: a prune batch size that is not a positive whole number.
    ("E011", ["WEFT_PRUNE_BATCH_SIZE"], [0, -5, 2.5, "1000", True], ()),
    # E013: a statement or lock timeout that is not at least a millisecond (or None).
    (
        "E013",
        ["WEFT_STATEMENT_TIMEOUT", "WEFT_LOCK_TIMEOUT"],
        [0, -1, 0.0001, "5", True, timedelta(seconds=5)],
        ("or None",),
    ),
    # E014 / E015: a liveness or LISTEN alias that names no database of DATABASES, with
    # the aliases there are.
    ("E014", ["WEFT_LIVENESS_DATABASE"], ["replica", "", ["default"], 1], ("'default'",)),
    (
        "E015",
        ["WEFT_LISTEN_DATABASE"],
        ["direct", "", ["default"], 1],
        ("'default'", "or be None"),
    ),
    # E060: WEFT_QUEUE_EXECUTORS must map queue names to "thread" or "process".
    (
        "E060",
        ["WEFT_QUEUE_EXECUTORS"],
        [["cpu"], {"cpu": "fork"}, {"cpu": None}, {1: "process"}, "process"],
        ('WEFT_QUEUE_EXECUTORS must map queue names to "thread" or "process"',),
    ),
    # E090: WEFT_JOB_MODULES is a list of dotted module names.
    (
        "E090",
        ["WEFT_JOB_MODULES"],
        ["yourapp.emails", ["yourapp..emails"], [".emails"], [""], [3], None],
        ("a list of dotted module names",),
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("check_id", "name", "value", "says"),
    [
        pytest.param(check_id, name, value, says, id=f"{check_id}-{name}={value!r}")
        for check_id, names, values, says in REFUSED
        for name in names
        for value in values
    ],
)
def test_checks_setting_refused(
    check_id: str, name: str, value: object, says: tuple[str, ...]
) -> None:
    """A setting of a value its check refuses is that check's error alone, naming the
    setting and the value (and saying why or what would do, where the table says)."""
    with override_settings(**{name: value}):
        (message,) = only(f"django_weft.{check_id}")
    assert isinstance(message, Error)
    assert name in message.msg
    assert repr(value) in message.msg
    for fragment in says:
        assert fragment in message.msg


@pytest.mark.django_db
@pytest.mark.parametrize(
    "overrides",
    [
        # The test settings (SQLite in IMMEDIATE mode, or PostgreSQL).
        pytest.param({}, id="the-test-settings"),
        # E001: the driven clock is a Clock subclass.
        pytest.param({"WEFT_CLOCK": "django_weft.testing.DrivenClock"}, id="E001-driven-clock"),
        pytest.param({"WEFT_CONCURRENCY": 1}, id="E003-concurrency-one"),
        # E004: no lateness allowed.
        pytest.param(
            {"WEFT_GRACE": timedelta(0), "WEFT_CATCH_UP_WINDOW": timedelta(0)}, id="E004-zero"
        ),
        # E006: WEFT_LOST_AFTER just more than twice the heartbeat interval.
        pytest.param(
            {"WEFT_LOST_AFTER": 10.5, "WEFT_HEARTBEAT_INTERVAL": 5}, id="E006-just-enough"
        ),
        # E010: pruning may be off.
        pytest.param({"WEFT_PRUNE_AFTER": None}, id="E010-pruning-off"),
        # E013: None (the server's own setting) or half a second.
        pytest.param(
            {"WEFT_STATEMENT_TIMEOUT": None, "WEFT_LOCK_TIMEOUT": 0.5}, id="E013-off-or-short"
        ),
        # E014: liveness by the heartbeat alone.
        pytest.param({"WEFT_LIVENESS_DATABASE": None}, id="E014-liveness-off"),
        # E015: no LISTEN, the workers poll.
        pytest.param({"WEFT_LISTEN_DATABASE": None}, id="E015-listen-off"),
        # E060: queues mapped to either executor.
        pytest.param({"WEFT_QUEUE_EXECUTORS": {"cpu": "process", "io": "thread"}}, id="E060-both"),
        # E090: modules named as a list or a tuple.
        pytest.param({"WEFT_JOB_MODULES": ["tests.jobs", "json"]}, id="E090-list"),
        pytest.param({"WEFT_JOB_MODULES": ("tests.jobs",)}, id="E090-tuple"),
    ],
)
def test_checks_settings_accepted(overrides: dict[str, object]) -> None:
    """Values at the edge of what each check accepts report no weft message."""
    with override_settings(**overrides):
        assert weft_messages() == []


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


# --- E009 USE_TZ ---------------------------------------------------------------


@pytest.mark.django_db
@override_settings(USE_TZ=False)
def test_checks_use_tz_off() -> None:
    """E009: USE_TZ = False is an error; moments are stored aware in UTC."""
    (message,) = only("django_weft.E009")
    assert "USE_TZ" in message.msg


# --- E010 pruning ----------------------------------------------------------------------


@pytest.mark.django_db
def test_checks_prune_interval_is_not_optional() -> None:
    """E010: pruning may be off (WEFT_PRUNE_AFTER = None, accepted above), its interval
    may not be None."""
    with override_settings(WEFT_PRUNE_INTERVAL=None):
        (message,) = only("django_weft.E010")
    assert "WEFT_PRUNE_INTERVAL must be a positive timedelta, not None" in message.msg


# --- E016 the LISTEN connection ------------------------------------------------------

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

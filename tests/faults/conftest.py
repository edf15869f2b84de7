"""The fault tests' session: throwaway PostgreSQL and Redis, and helpers to use them.

Run with ``WEFT_TEST_DATABASE=postgres WEFT_TEST_CHANNEL_LAYER=redis bash scripts/test.sh
-n 0 -m faults tests/faults``, in one process: they time heartbeats and outages. Every
test in this folder is marked ``faults``, which the normal suite deselects. The default
database and the channel layer of this process point at the throwaway servers before
the test database is created, and ``tests.processes`` hands the same servers to every
child process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import close_old_connections, connections
from django.test import override_settings

from django_weft.engine.worker.liveness import lock_key
from django_weft.models import Run
from tests.browsers import browser  # noqa: F401  (the fixture, for the example outage test)
from tests.faults.pgbouncer import PgBouncer
from tests.faults.servers import FaultServers, PostgresCluster, RedisServer, fault_servers
from tests.processes import REDIS_LAYER, AsgiServer, Runjobs, asgi_server, runjobs

HERE = Path(__file__).resolve().parent
COMMAND = (
    "WEFT_TEST_DATABASE=postgres WEFT_TEST_CHANNEL_LAYER=redis "
    "bash scripts/test.sh -n 0 -m faults tests/faults"
)
#: Workers that beat twice a second and count six seconds of silence as death: short
#: enough for tests to wait for, long enough that a worker starved of CPU on a busy
#: machine (or backing off through a database restart) is not declared dead.
FAST_HEARTBEAT = {"WEFT_TEST_HEARTBEAT_INTERVAL": "0.5", "WEFT_TEST_LOST_AFTER": "6"}


def database_name() -> str:
    """The name of the database this test (and its ``runjobs``) use."""
    return str(connections["default"].settings_dict["NAME"])


def lock_holder(postgres: PostgresCluster, worker_id: Any) -> int | None:
    """The backend holding worker ``worker_id``'s liveness lock, read from ``pg_locks``."""
    rows = postgres.query(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND granted "
        "AND ((classid::bigint << 32) | objid::bigint) = %s",
        (lock_key(worker_id),),
        database=database_name(),
    )
    return int(rows[0][0]) if rows else None  # type: ignore[call-overload]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark everything in this folder ``faults`` before ``-m`` selects."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.faults)


@pytest.fixture(scope="session")
def servers() -> Iterator[FaultServers]:
    """This session's PostgreSQL cluster and Redis server."""
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql" or (
        settings.CHANNEL_LAYERS["default"]["BACKEND"] != REDIS_LAYER
    ):
        pytest.fail(f"the fault tests run on PostgreSQL and channels-redis: {COMMAND}", False)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.fail(f"the fault tests time heartbeats and outages: one process, {COMMAND}", False)
    with fault_servers() as started:
        yield started


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, servers: FaultServers
) -> None:
    """The default database on the throwaway cluster, before the test database is made."""
    settings.DATABASES["default"].update(servers.postgres.connection_settings())
    connections["default"].close()


@pytest.fixture(scope="session", autouse=True)
def _channel_layer_on_throwaway_redis(servers: FaultServers) -> Iterator[None]:
    """The channel layer on the throwaway Redis (override_settings resets channels' cache)."""
    layer = settings.CHANNEL_LAYERS["default"]
    config = {**layer["CONFIG"], "hosts": [servers.redis.url]}
    with override_settings(CHANNEL_LAYERS={"default": {**layer, "CONFIG": config}}):
        yield


@pytest.fixture
def postgres(servers: FaultServers) -> Iterator[PostgresCluster]:
    """The throwaway cluster; running again after the test, whatever the test did to it.

    This thread's connection may have died with a restart: it is closed, so that
    pytest-django's clean-up after the test connects afresh.
    """
    yield servers.postgres
    if not servers.postgres.is_running():
        servers.postgres.start()
    close_old_connections()


@pytest.fixture
def redis(servers: FaultServers) -> Iterator[RedisServer]:
    """The throwaway Redis; running again after the test, whatever the test did to it."""
    yield servers.redis
    if servers.redis.process is None:
        servers.redis.start()


@pytest.fixture
def pgbouncer(servers: FaultServers) -> Iterator[PgBouncer]:
    """PgBouncer in transaction pooling in front of this session's cluster, for one test
    (its server sessions would keep the test database from being dropped)."""
    bouncer = PgBouncer(servers.directory, servers.postgres)
    bouncer.start()
    try:
        yield bouncer
    finally:
        bouncer.stop()


@pytest.fixture
def start_runjobs() -> Iterator[Callable[..., Runjobs]]:
    """Call it to start a ``runjobs`` with a fast heartbeat; each is stopped after the test."""
    started: list[Runjobs] = []

    def start(*flags: str, extra_env: dict[str, str] | None = None) -> Runjobs:
        process = runjobs(*flags, extra_env={**FAST_HEARTBEAT, **(extra_env or {})})
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def uvicorn() -> Iterator[AsgiServer]:
    """uvicorn serving the test project's HTTP and websockets on the throwaway servers."""
    with asgi_server() as server:
        yield server


def reachable() -> bool:
    """Whether this process can query the database again (reconnecting if it must)."""
    try:
        connections["default"].close()
        return Run.objects.exists() or True
    except Exception:
        return False

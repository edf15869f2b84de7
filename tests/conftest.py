from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime

import pytest
import pytest_asyncio
import pytest_django
from asgiref.sync import SyncToAsync
from channels.layers import channel_layers
from django.contrib.contenttypes.models import ContentType
from django.db import connections
from django.test import TransactionTestCase

from django_weft.engine.limits import fairness
from django_weft.engine.worker.loop import Worker
from django_weft.live import layer_health, publisher
from django_weft.live.layer_health import LayerOutage
from django_weft.models import Schedule
from django_weft.signals import schedule_failed
from django_weft.tasks import framework_installed
from django_weft.testing import DrivenClock, Rehearsal
from tests.databases import delete_rows, last_ids
from tests.live_client import CommunicatorSocket

#: tests/tasks needs a tasks framework: django.tasks (Django 6.0+) or the django-tasks
#: backport. Without one (Django 5.2 alone) the folder is not collected, rather than
#: collected as failures or skips.
collect_ignore = [] if framework_installed() else ["tasks"]

#: The markers of tests that the inner loop (``-m quick``) leaves out.
NOT_QUICK = ("slow", "faults", "packaging", "bench")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``quick`` every test that starts no process or browser and is no fault,
    packaging or benchmark test: ``bash scripts/test.sh -m quick`` is the inner loop
    while coding (docs/testing.md), the whole suite what CI runs."""
    for item in items:
        if not any(item.get_closest_marker(name) for name in NOT_QUICK):
            item.add_marker(pytest.mark.quick)


@pytest_asyncio.fixture
async def sockets() -> AsyncIterator[list[CommunicatorSocket]]:
    """The communicators a test opened (``open_socket``); all closed even if one fails to."""
    opened: list[CommunicatorSocket] = []
    yield opened
    closed = await asyncio.gather(*(socket.close() for socket in opened), return_exceptions=True)
    errors = [error for error in closed if isinstance(error, BaseException)]
    if errors:
        raise errors[0]


@pytest.fixture
def clock() -> DrivenClock:
    """A driven clock at 06:00 in Toronto on the Saturday before the clocks go forward."""
    return DrivenClock(datetime(2026, 3, 7, 11, 0, tzinfo=UTC))


@pytest.fixture
def rehearsal(clock: DrivenClock, transactional_db: None) -> Iterator[Rehearsal]:
    """An inline worker on ``clock``, driven by ``rehearsal.advance()``; the clock is the
    process's while the test runs."""
    with Rehearsal(clock, executor="django_weft.engine.worker.executors.InlineExecutor") as built:
        yield built


@pytest.fixture
def worker(rehearsal: Rehearsal) -> Worker:
    """The rehearsal's worker (the newest one, when the test restarted it)."""
    return rehearsal.worker


@pytest.fixture
def failures() -> Iterator[list[dict[str, object]]]:
    """Every schedule_failed signal sent during the test."""
    heard: list[dict[str, object]] = []

    def receiver(sender: type[Schedule], **kwargs: object) -> None:
        heard.append(kwargs)

    schedule_failed.connect(receiver, dispatch_uid="tests.failures")
    yield heard
    schedule_failed.disconnect(dispatch_uid="tests.failures")


@pytest.fixture
def worker_threads() -> Iterator[Callable[[], Worker]]:
    """Call it to start a worker executing runs on its own threads, as ``runjobs`` does.

    After the test every one of them is stopped at once (running runs aborted) and has
    ended, its run threads too, before the next fixture is torn down: a worker thread
    that lived on would write into the next test and hold a connection to the test
    database when pytest-django drops it.
    """
    started: list[tuple[Worker, threading.Thread]] = []

    def start() -> Worker:
        worker = Worker(
            executor="django_weft.engine.worker.executors.ThreadExecutor",
            concurrency=2,
            poll_interval=0.05,
        )

        def work() -> None:
            try:
                worker.run()
            finally:
                connections.close_all()

        thread = threading.Thread(target=work, name=f"weft-test-worker-{len(started)}")
        started.append((worker, thread))
        thread.start()
        return worker

    yield start
    for worker, _ in started:
        worker.force_stop()
    for worker, thread in started:
        thread.join(30)
        assert not thread.is_alive(), f"{thread.name} did not stop within 30s"
        # Its run threads too: each holds a connection until it ends.
        worker.executor.shutdown(wait=True)


@pytest.fixture
def running_worker(worker_threads: Callable[[], Worker]) -> Worker:
    """A worker executing runs on its own threads, as ``runjobs`` does."""
    return worker_threads()


@pytest.fixture(autouse=True)
def _channel_layers_of_this_test() -> Iterator[None]:
    """Each test gets channel layers of its own.

    channels keeps one layer per alias for the whole process, but a layer's state
    belongs to the event loop that used it (channels-redis keeps connection pools per
    loop and ``asyncio.Lock``s for receiving; the in-memory layer keeps queues), and
    pytest-asyncio runs each test on a new loop. A receive lock left locked by one
    test's cancelled socket then fails a later test's receive with "Lock ... is bound
    to a different event loop".

    The same goes for the publishing thread, which keeps a loop of its own.
    """
    channel_layers.backends.clear()
    yield
    # What the test published is delivered, and the publishing thread ends (its loop,
    # with the layer's connections, and its database connection), before the next test.
    assert publisher.stop(30), "the live publisher did not end within 30s"
    channel_layers.backends.clear()


@pytest.fixture(autouse=True)
def _fair_shares_read_afresh() -> None:
    """Each test's first start reads the fair shares: a process trusts what it read for a
    second, and an earlier test's rows are gone."""
    fairness.forget()


@pytest.fixture(autouse=True)
def _no_outage_from_an_earlier_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with the layer working, as far as this process knows.

    An outage is remembered until a call works again; a test that stopped a Redis and
    ended before anything published would otherwise leave the next test's first
    publish logging the end of an outage it never saw.
    """
    monkeypatch.setattr(publisher, "publishing", LayerOutage("publishing"))
    monkeypatch.setattr(layer_health, "sockets_outage", LayerOutage("live sockets"))


@pytest.fixture(autouse=True)
def _no_connection_left_on_asgirefs_thread() -> Iterator[None]:
    """Close the connections async tests opened through ``sync_to_async``.

    Those calls run on asgiref's one thread-sensitive thread, which lives for the whole
    session; unlike a request (or channels' ``database_sync_to_async``) nothing closes
    its connections, and one left open at the end keeps pytest-django from dropping
    the test database ("being accessed by other users").
    """
    yield
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()


@pytest.fixture(scope="session")
def django_db_setup(
    django_db_setup: None, django_db_blocker: pytest_django.DjangoDbBlocker
) -> Iterator[None]:
    """The test databases, and a cheaper end for transactional tests.

    After each transactional test Django's ``flush`` empties every table, then sends
    post_migrate to write the content types and permissions again: 0.15-0.25 s a test on
    SQLite, and its ``TRUNCATE`` of every table 0.5 s or more on PostgreSQL, with some
    400 such tests. This ends them instead by deleting the rows they wrote
    (:mod:`tests.databases`).
    Tests that ask for ``serialized_rollback`` or ``available_apps`` keep Django's flush.
    """
    with django_db_blocker.unblock():
        written = {alias: last_ids(alias) for alias in connections}
    flush = TransactionTestCase._fixture_teardown

    def delete_what_tests_wrote(case: TransactionTestCase) -> None:
        if case.serialized_rollback or case.available_apps is not None:
            flush(case)
            return
        for alias in case._databases_names(include_mirrors=False):
            delete_rows(alias, written[alias])
        ContentType.objects.clear_cache()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", delete_what_tests_wrote)
        yield

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime

import pytest
import pytest_asyncio
from asgiref.sync import SyncToAsync
from channels.layers import channel_layers
from django.db import connections

from django_weft.models import Schedule
from django_weft.signals import schedule_failed
from django_weft.testing import DrivenClock
from django_weft.worker import Worker
from tests.live_client import CommunicatorSocket


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
def worker(clock: DrivenClock, transactional_db: None) -> Iterator[Worker]:
    built = Worker(clock=clock, executor="django_weft.executors.InlineExecutor")
    yield built
    built.close()


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
            executor="django_weft.executors.ThreadExecutor", concurrency=2, poll_interval=0.05
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
    """
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


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

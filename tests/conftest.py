from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.db import connections

from django_weft.models import Schedule
from django_weft.signals import schedule_failed
from django_weft.testing import DrivenClock
from django_weft.worker import Worker


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
def running_worker() -> Iterator[Worker]:
    """A worker executing runs on its own threads, as ``runjobs`` does."""
    worker = Worker(
        executor="django_weft.executors.ThreadExecutor", concurrency=2, poll_interval=0.05
    )

    def work() -> None:
        try:
            worker.run()
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    yield worker
    worker.stop()
    thread.join(30)

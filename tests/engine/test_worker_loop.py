"""The worker loop's fairness (firing never starves executing, nor executing firing), and
its error boundary."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext

from django_weft.conf import weft_settings
from django_weft.engine.database.outages import FAILED
from django_weft.engine.worker.loop import Worker
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus, Schedule
from django_weft.operations import start
from django_weft.testing import DrivenClock
from tests.example_server import free_port

pytestmark = pytest.mark.django_db(transaction=True)


def due_one_offs(clock: DrivenClock, count: int) -> None:
    """``count`` one-offs already armed and due, as rows saved in advance would be."""
    now = clock.now()
    Schedule.objects.bulk_create(
        Schedule(
            name=f"due {n}",
            job="tests.noop",
            at=now - timedelta(seconds=n),
            armed=True,
            next_due=now - timedelta(seconds=n),
        )
        for n in range(count)
    )


def test_a_round_fires_one_batch_then_executes(clock: DrivenClock, worker: Worker) -> None:
    """A backlog of due fires does not hold runs back: each round fires a batch and
    claims what its free slots take."""
    due_one_offs(clock, 250)
    worker.start()
    worker.tick()
    assert Run.objects.count() == worker.scheduler.batch_size, "one batch of fires per round"
    assert Run.objects.filter(status=RunStatus.DONE).count() == worker.executor.concurrency
    worker.tick()
    assert Run.objects.count() == 2 * worker.scheduler.batch_size
    assert Run.objects.filter(status=RunStatus.DONE).count() == 2 * worker.executor.concurrency


def test_a_long_queue_does_not_hold_a_fire_back(clock: DrivenClock, worker: Worker) -> None:
    """With runs queued far beyond the free slots, a due schedule still fires this round."""
    noop = registry.get("tests.noop")
    for _ in range(40):
        start(noop)
    due_one_offs(clock, 1)
    worker.start()
    worker.tick()
    fired = Schedule.objects.get(name="due 0")
    assert Run.objects.filter(schedule=fired).exists()
    assert Run.objects.filter(status=RunStatus.QUEUED).count() > 0, "the queue is still long"


def test_the_claim_comes_before_the_heartbeat_and_the_fires(
    clock: DrivenClock, worker: Worker
) -> None:
    """A queued run is claimed by the round's first statement, ahead of a heartbeat that
    came due and of a due schedule's fire: nothing stands in front of what a NOTIFY woke
    the loop for."""
    worker.start()
    worker.tick()
    start(registry.get("tests.noop"))
    due_one_offs(clock, 1)
    clock.skip(timedelta(seconds=weft_settings.HEARTBEAT_INTERVAL + 1))
    with CaptureQueriesContext(connection) as captured:
        worker.tick()
    statements = [query["sql"] for query in captured.captured_queries]
    claim = next(i for i, sql in enumerate(statements) if "RETURNING" in sql and "'running'" in sql)
    heartbeat = next(i for i, sql in enumerate(statements) if "last_beat" in sql)
    fire = next(i for i, sql in enumerate(statements) if "django_weft_schedule" in sql)
    assert claim < heartbeat
    assert claim < fire
    assert Run.objects.filter(status=RunStatus.DONE).count() == 2, "the fired run too"


@pytest.fixture
def unreachable_database() -> Iterator[None]:
    """While inside, a new connection of this thread fails: the database went away."""
    settings = connection.settings_dict
    key, value = (
        ("PORT", str(free_port()))
        if connection.vendor == "postgresql"
        else (
            "NAME",
            "/nonexistent/weft.sqlite3",
        )
    )
    kept = settings[key]
    settings[key] = value
    try:
        yield
    finally:
        connection.close()
        settings[key] = kept


def test_a_step_that_changed_rows_then_lost_the_database_stays_in_the_boundary(
    worker: Worker, unreachable_database: None
) -> None:
    """A step noted a change, then failed as its connection died (the connection closed,
    the server gone): publishing that change asks for a connection and fails too. The
    loop counts it as the step's outage; runjobs goes on."""

    def step(now: object, changes: Changes) -> bool:
        changes.run(uuid.uuid4())
        connection.close()
        raise OperationalError("server closed the connection unexpectedly")

    assert worker._guarded("finish", step) is FAILED
    assert worker.outage.ongoing

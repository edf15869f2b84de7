"""Tests for the rehearsal (``django_weft.testing.Rehearsal``): a worker and its driven
clock moved together, the clock installed as the process's while the rehearsal lives;
and the process clock a worker built without one reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from django_weft.engine.worker.executors import InlineExecutor
from django_weft.engine.worker.loop import Worker
from django_weft.jobs.context import RunContext
from django_weft.jobs.registry import Job, registry
from django_weft.models import Run, RunStatus, Schedule, WorkerProcess
from django_weft.operations import start
from django_weft.testing import DrivenClock, Rehearsal
from django_weft.timing import clocks
from django_weft.timing.clocks import SystemClock

START = datetime(2026, 3, 7, 11, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
INLINE = "django_weft.engine.worker.executors.InlineExecutor"

#: What each run of ``tests.witness`` saw: (its due, the process clock's now, that clock).
Seen = list[tuple[datetime | None, datetime, clocks.Clock]]


@pytest.fixture
def seen() -> Iterator[Seen]:
    """Registers ``tests.witness``, a job that notes what it saw, for the test only."""
    noted: Seen = []

    def witness(ctx: RunContext) -> None:
        noted.append((ctx.due, clocks.now(), clocks.current_clock()))

    registered = registry.register(Job(func=witness, name="tests.witness"))
    yield noted
    registry.unregister(registered.name)


@pytest.fixture
def no_clock_installed() -> Iterator[None]:
    """Each test starts and ends with no clock installed."""
    clocks.install_clock(None)
    yield
    clocks.install_clock(None)


pytestmark = pytest.mark.usefixtures("no_clock_installed")


@pytest.mark.django_db(transaction=True)
def test_rehearsal_advance_fires_everything_due_in_time_order(
    clock: DrivenClock, rehearsal: Rehearsal, seen: Seen
) -> None:
    """Three schedules interleaved: each fire runs at its own moment, in time order, on the
    rehearsal's clock, and time ends at the target."""
    Schedule.objects.create(name="every", job="tests.witness", every=20 * MINUTE)
    Schedule.objects.create(name="half past", job="tests.witness", at=START + 30 * MINUTE)
    Schedule.objects.create(name="ten to", job="tests.witness", at=START + 50 * MINUTE)
    rehearsal.advance(timedelta(hours=1))
    assert [due for due, _, _ in seen] == [START + m * MINUTE for m in (20, 30, 40, 50, 60)]
    assert all(now == due for due, now, _ in seen), "each run saw its own moment"
    assert all(read is clock for _, _, read in seen), "the process clock was the rehearsal's"
    assert clock.now() == rehearsal.now() == START + timedelta(hours=1)
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.DONE}


@pytest.mark.django_db(transaction=True)
def test_rehearsal_advance_zero_does_what_is_due_now(
    clock: DrivenClock, rehearsal: Rehearsal, seen: Seen
) -> None:
    """advance(timedelta(0)) runs what is due at this moment, and time stays."""
    start(registry.get("tests.witness"))
    rehearsal.advance(timedelta(0))
    assert [(due, now) for due, now, _ in seen] == [(None, START)]
    assert clock.now() == START


@pytest.mark.django_db(transaction=True)
def test_rehearsal_runs_on_threads_finish_before_time_moves_on(clock: DrivenClock) -> None:
    """With run threads too, each run ends before the clock moves to the next fire."""
    Schedule.objects.create(
        name="sleepy", job="tests.sleep", args={"seconds": 0.2}, every=10 * MINUTE
    )
    executor = "django_weft.engine.worker.executors.ThreadExecutor"
    with Rehearsal(clock, executor=executor, concurrency=2) as rehearsal:
        started = time.monotonic()
        rehearsal.advance(30 * MINUTE)
        assert time.monotonic() - started >= 0.6, "three runs of 0.2 s, one after the other"
    runs = list(Run.objects.order_by("due"))
    assert [run.due for run in runs] == [START + m * MINUTE for m in (10, 20, 30)]
    assert all(run.status == RunStatus.DONE for run in runs)
    assert all(run.finished_at == run.started_at == run.due for run in runs), (
        "time did not move while a run was running"
    )


@pytest.mark.django_db(transaction=True)
def test_rehearsal_installs_its_clock_while_it_lives(clock: DrivenClock) -> None:
    """While the rehearsal lives the process reads its clock: a run started by code is
    created on the rehearsal's time; after close() the process clock is back."""
    assert type(clocks.current_clock()) is SystemClock
    with Rehearsal(clock, executor=INLINE) as rehearsal:
        assert clocks.current_clock() is clock
        assert rehearsal.worker.clock is clock
        clock.skip(timedelta(days=3))
        run = start(registry.get("tests.noop"))
        assert run.created_at == START + timedelta(days=3)
        assert clocks.now() == START + timedelta(days=3)
    assert type(clocks.current_clock()) is SystemClock
    before = datetime.now(UTC)
    assert before <= clocks.now() <= datetime.now(UTC), "the real time again"


@pytest.mark.django_db(transaction=True)
def test_rehearsal_close_puts_back_the_clock_installed_before(clock: DrivenClock) -> None:
    """A clock installed before the rehearsal (runjobs's, another test's) comes back;
    closing twice closes once."""
    before = DrivenClock(START - timedelta(days=1))
    clocks.install_clock(before)
    rehearsal = Rehearsal(clock, executor=INLINE)
    assert clocks.current_clock() is clock
    rehearsal.close()
    assert clocks.current_clock() is before
    clocks.install_clock(None)
    rehearsal.close()
    assert type(clocks.current_clock()) is SystemClock


def test_rehearsal_uninstalls_its_clock_when_its_worker_cannot_be_built(
    clock: DrivenClock,
) -> None:
    """A worker refused at build (an unknown option) leaves no clock installed behind."""
    with pytest.raises(TypeError, match="no_such_option"):
        Rehearsal(clock, executor=INLINE, no_such_option=True)
    assert type(clocks.current_clock()) is SystemClock


@pytest.mark.django_db(transaction=True)
def test_rehearsal_advance_refuses_to_go_back(clock: DrivenClock, rehearsal: Rehearsal) -> None:
    with pytest.raises(ValueError, match="forward"):
        rehearsal.advance(timedelta(seconds=-1))
    assert clock.now() == START


@pytest.mark.django_db(transaction=True)
def test_rehearsal_restart_is_a_new_process_after_the_downtime(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """restart() closes the worker, lets the time pass with nothing running, and builds a
    new worker with the same options, registered as a new process."""
    row = Schedule.objects.create(name="once", job="tests.noop", at=START + 30 * MINUTE)
    rehearsal.advance(timedelta(0))
    first = rehearsal.worker
    assert first.process is not None
    second = rehearsal.restart(down=timedelta(hours=1))
    assert second is rehearsal.worker is not first
    assert isinstance(second.executor, InlineExecutor), "the same options"
    assert clock.now() == START + timedelta(hours=1)
    assert Run.objects.count() == 0, "nothing ran while it was down"
    assert WorkerProcess.objects.get(pk=first.process.pk).stopped_at is not None
    rehearsal.advance(timedelta(0))
    run = Run.objects.get(schedule=row)
    assert (run.status, run.due) == (RunStatus.DONE, START + 30 * MINUTE)
    assert run.worker_id == second.process.pk  # type: ignore[union-attr]


# -- the process clock a worker reads ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_worker_built_without_a_clock_uses_the_installed_one(clock: DrivenClock) -> None:
    """Worker() reads the process clock: the installed one, else the one WEFT_CLOCK names."""
    clocks.install_clock(clock)
    try:
        worker = Worker(executor=INLINE)
        assert worker.clock is clock
        worker.close()
    finally:
        clocks.install_clock(None)
    worker = Worker(executor=INLINE)
    assert worker.clock is clocks.current_clock()
    assert type(worker.clock) is SystemClock
    worker.close()


def test_install_clock_returns_the_clock_installed_before(clock: DrivenClock) -> None:
    assert clocks.install_clock(clock) is None
    other = DrivenClock(START)
    assert clocks.install_clock(other) is clock
    assert clocks.install_clock(None) is other
    assert type(clocks.current_clock()) is SystemClock


def test_driven_clock_pausing_at_pauses_a_sleep_past_the_moment() -> None:
    """Inside pausing_at(), a sleep to a later moment stops at the pause, raising
    ClockPaused; one before it moves time there; after the block time is at the moment."""
    clock = DrivenClock(START)
    with clock.pausing_at(START + timedelta(hours=1)):
        clock.sleep_until(START + 10 * MINUTE, threading.Event(), 60.0)
        assert clock.now() == START + 10 * MINUTE
        with pytest.raises(clocks.ClockPaused):
            clock.sleep_until(START + timedelta(hours=2), threading.Event(), 60.0)
        assert clock.now() == START + timedelta(hours=1)
    assert clock.now() == START + timedelta(hours=1)
    # Nobody drives it any more: a sleep jumps again (a rehearsal at full speed).
    clock.sleep_until(START + timedelta(days=1), threading.Event(), 60.0)
    assert clock.now() == START + timedelta(days=1)

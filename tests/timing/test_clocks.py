"""Tests for the clocks (DESIGN §2): the scheduler reads time only through a clock, chosen
by ``WEFT_CLOCK``; the driven clock moves only when told to.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import override_settings

from django_weft.engine.worker.loop import Worker
from django_weft.models import Run, RunStatus, Schedule
from django_weft.testing import DrivenClock, Rehearsal
from django_weft.timing.clocks import Clock, SystemClock, load_clock

START = datetime(2026, 3, 7, 11, 0, tzinfo=UTC)


class FrozenClock(Clock):
    """A clock stuck at START, loaded by import string."""

    def now(self) -> datetime:
        return START

    def sleep_until(self, moment: datetime | None, wake: threading.Event, longest: float) -> None:
        """Never waits."""


class LaterClock(FrozenClock):
    """Stands in for FrozenClock once the module attribute is replaced."""


# --- load_clock / WEFT_CLOCK ---------------------------------------------------------------


def test_load_clock_default() -> None:
    """Without WEFT_CLOCK, load_clock() gives a new system clock."""
    first, second = load_clock(), load_clock()
    assert type(first) is SystemClock
    assert first is not second


def test_load_clock_setting() -> None:
    """load_clock() honours WEFT_CLOCK under override_settings, and the default comes back after."""
    with override_settings(WEFT_CLOCK="tests.timing.test_clocks.FrozenClock"):
        assert type(load_clock()) is FrozenClock
    with override_settings(WEFT_CLOCK="django_weft.testing.DrivenClock"):
        assert type(load_clock()) is DrivenClock
    assert type(load_clock()) is SystemClock


def test_load_clock_explicit_path() -> None:
    """An explicit import string (runjobs --clock) wins over WEFT_CLOCK."""
    with override_settings(WEFT_CLOCK="tests.timing.test_clocks.FrozenClock"):
        assert type(load_clock("django_weft.timing.clocks.SystemClock")) is SystemClock


def test_load_clock_cache_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    """Changing WEFT_CLOCK clears the class cache: the same path is imported afresh."""
    path = "tests.timing.test_clocks.FrozenClock"
    with override_settings(WEFT_CLOCK=path):
        assert type(load_clock()) is FrozenClock
    monkeypatch.setattr(f"{__name__}.FrozenClock", LaterClock)
    with override_settings(WEFT_CLOCK=path):
        assert type(load_clock()) is LaterClock


def test_load_clock_not_a_clock() -> None:
    """A WEFT_CLOCK naming a class that is not a Clock is refused with TypeError naming it."""
    with (
        override_settings(WEFT_CLOCK="django_weft.models.Schedule"),
        pytest.raises(TypeError, match=r"django_weft\.models\.Schedule"),
    ):
        load_clock()


def test_load_clock_missing() -> None:
    """A WEFT_CLOCK that cannot be imported raises ImportError."""
    with override_settings(WEFT_CLOCK="no.such.Clock"), pytest.raises(ImportError):
        load_clock()


# --- SystemClock ---------------------------------------------------------------------------


def test_system_clock_now_aware_utc() -> None:
    """SystemClock.now() is the real time, timezone-aware, in UTC."""
    before = datetime.now(UTC)
    now = SystemClock().now()
    after = datetime.now(UTC)
    assert now.tzinfo is UTC
    assert now.utcoffset() == timedelta(0)
    assert before <= now <= after


#: Longer than any test may wait: a sleep told to wait this long that returns shows it
#: returned for the reason the test gives it, not because the time was up.
FOREVER = 3600.0
#: A deadline for a sleep's return, never a bound on how long it takes.
EVENTUALLY = 60.0


def returns(sleep: Callable[[], None]) -> bool:
    """Whether ``sleep`` returns within :data:`EVENTUALLY` seconds (on a thread of its own)."""
    sleeper = threading.Thread(target=sleep, daemon=True)
    sleeper.start()
    sleeper.join(EVENTUALLY)
    return not sleeper.is_alive()


def test_system_clock_sleep_until_past_moment() -> None:
    """sleep_until a moment already past returns at once, not after ``longest``."""
    clock = SystemClock()
    past = clock.now() - timedelta(seconds=5)
    assert returns(lambda: clock.sleep_until(past, threading.Event(), FOREVER))


def test_system_clock_sleep_until_wake() -> None:
    """sleep_until returns as soon as the wake event is set, and clears it."""
    clock = SystemClock()
    wake = threading.Event()
    timer = threading.Timer(0.05, wake.set)
    timer.start()
    later = clock.now() + timedelta(seconds=FOREVER)
    assert returns(lambda: clock.sleep_until(later, wake, FOREVER))
    timer.join()
    assert not wake.is_set()


def test_system_clock_sleep_until_longest() -> None:
    """sleep_until waits ``longest`` seconds when nothing is due and nothing wakes it: at
    least that long, and then it returns."""
    clock = SystemClock()
    started = time.monotonic()
    assert returns(lambda: clock.sleep_until(None, threading.Event(), 0.05))
    assert time.monotonic() - started >= 0.04


# --- DrivenClock ---------------------------------------------------------------------------


def test_driven_clock_now_fixed() -> None:
    """A driven clock's now() does not move on its own."""
    clock = DrivenClock(START)
    first = clock.now()
    time.sleep(0.01)
    assert clock.now() == first == START


def test_driven_clock_start_in_utc() -> None:
    """A start given in another zone is the same instant, read back in UTC."""
    clock = DrivenClock(datetime(2026, 3, 7, 6, 0, tzinfo=ZoneInfo("America/Toronto")))
    assert clock.now() == START
    assert clock.now().tzinfo is UTC


def test_driven_clock_start_default_now() -> None:
    """A driven clock built without a start starts at the real now, in UTC."""
    before = datetime.now(UTC)
    clock = DrivenClock()
    assert before <= clock.now() <= datetime.now(UTC)
    assert clock.now().tzinfo is UTC


def test_driven_clock_advance_just_moves() -> None:
    """advance() on the clock alone just moves time by the delta."""
    clock = DrivenClock(START)
    clock.advance(timedelta(hours=3, minutes=5))
    assert clock.now() == START + timedelta(hours=3, minutes=5)
    clock.advance(timedelta(0))
    assert clock.now() == START + timedelta(hours=3, minutes=5)


@pytest.mark.parametrize("method", ["advance", "skip"])
def test_driven_clock_negative_delta(method: str) -> None:
    """advance() and skip() refuse to move time backwards, naming the delta, and leave now alone."""
    clock = DrivenClock(START)
    with pytest.raises(ValueError, match="forward") as caught:
        getattr(clock, method)(timedelta(seconds=-1))
    assert str(timedelta(seconds=-1)) in str(caught.value)
    assert clock.now() == START


@pytest.mark.django_db(transaction=True)
def test_driven_clock_advance_runs_nothing_even_with_a_worker_on_it(clock: DrivenClock) -> None:
    """The clock does not know the workers built on it: advancing it alone fires nothing."""
    Schedule.objects.create(name="once", job="tests.noop", at=START + timedelta(minutes=30))
    worker = Worker(clock=clock, executor="django_weft.engine.worker.executors.InlineExecutor")
    try:
        worker.tick()  # arms the row
        clock.advance(timedelta(hours=1))
        assert clock.now() == START + timedelta(hours=1)
        assert Run.objects.count() == 0
    finally:
        worker.close()


@pytest.mark.django_db(transaction=True)
def test_driven_clock_skip_runs_nothing(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal
) -> None:
    """skip() moves time without firing a row that comes due meanwhile; advance() fires it later."""
    row = Schedule.objects.create(name="once", job="tests.noop", at=START + timedelta(minutes=30))
    worker.tick()  # arms the row
    row.refresh_from_db()
    assert row.next_due == START + timedelta(minutes=30)
    clock.skip(timedelta(hours=1))
    assert clock.now() == START + timedelta(hours=1)
    assert Run.objects.count() == 0
    row.refresh_from_db()
    assert row.next_due == START + timedelta(minutes=30)
    # The row was due during the skip and never fired; advancing now fires it, late.
    rehearsal.advance(timedelta(0))
    run = Run.objects.get()
    assert run.status == RunStatus.DONE
    assert run.due == START + timedelta(minutes=30)


@pytest.mark.django_db(transaction=True)
def test_rehearsal_advance_fires_due(clock: DrivenClock, rehearsal: Rehearsal) -> None:
    """A rehearsal's advance() fires each slot on the way with its due, and ends at the target."""
    Schedule.objects.create(name="every", job="tests.noop", every=timedelta(minutes=20))
    rehearsal.advance(timedelta(hours=1))
    assert clock.now() == START + timedelta(hours=1)
    assert list(Run.objects.order_by("due").values_list("due", flat=True)) == [
        START + timedelta(minutes=20),
        START + timedelta(minutes=40),
        START + timedelta(minutes=60),
    ]
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.DONE}


def test_driven_clock_sleep_until_rehearsal() -> None:
    """Without an advance in progress, sleep_until jumps straight to the moment (rehearsal mode)."""
    clock = DrivenClock(START)
    assert returns(lambda: clock.sleep_until(START + timedelta(days=2), threading.Event(), FOREVER))
    assert clock.now() == START + timedelta(days=2)


def test_driven_clock_sleep_until_rehearsal_no_moment() -> None:
    """Without an advance and with nothing due, sleep_until moves time by ``longest`` seconds."""
    clock = DrivenClock(START)
    clock.sleep_until(None, threading.Event(), 30.0)
    assert clock.now() == START + timedelta(seconds=30)


def test_driven_clock_sleep_until_past_moment() -> None:
    """In rehearsal mode sleep_until never moves time backwards."""
    clock = DrivenClock(START)
    clock.sleep_until(START - timedelta(hours=1), threading.Event(), 1.0)
    assert clock.now() == START

"""Tests for django_weft.engine.schedules.scheduler: arming, firing, catch-up, overlap, live
edits and cost.

The clock starts at 2026-03-07 11:00 UTC, 06:00 in Toronto (EST, -5); Toronto springs
forward on 2026-03-08, so its 07:00 is 12:00 UTC on the 7th and 11:00 UTC from the 8th.
``rehearsal.advance`` runs a worker through every slot on the way, ``clock.skip`` moves
time with the worker down. Expected dues are written out as instants, never read back
from the code under test.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from django_weft.engine.outcomes.finishing import Claim, finish
from django_weft.engine.schedules.scheduler import Scheduler, decide
from django_weft.engine.worker.loop import Worker
from django_weft.jobs.context import RunContext
from django_weft.jobs.registry import Job, registry
from django_weft.live.changes import Changes
from django_weft.models import CatchUp, LastStatus, Overlap, Run, RunStatus, Schedule
from django_weft.signals import run_finished
from django_weft.testing import DrivenClock, Rehearsal

SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
TORONTO = "America/Toronto"
START = datetime(2026, 3, 7, 11, 0, tzinfo=UTC)


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def dues(schedule: Schedule) -> list[datetime | None]:
    """The dues of the schedule's runs, oldest first."""
    return list(Run.objects.filter(schedule=schedule).order_by("due").values_list("due", flat=True))


def stored(schedule: Schedule) -> Schedule:
    return Schedule.objects.get(pk=schedule.pk)


def hourly(name: str = "hourly", **fields: Any) -> Schedule:
    """A row firing tests.noop at the top of every UTC hour."""
    fields.setdefault("job", "tests.noop")
    return Schedule.objects.create(name=name, cron="0 * * * *", timezone="UTC", **fields)


def digest(**fields: Any) -> Schedule:
    """A row firing tests.noop at 07:00 every day in Toronto."""
    return Schedule.objects.create(
        name="digest", job="tests.noop", cron="0 7 * * *", timezone=TORONTO, **fields
    )


@pytest.fixture
def executed() -> Iterator[list[datetime | None]]:
    """The due of every run, in the order the runs finished."""
    order: list[datetime | None] = []

    def receiver(sender: type[Run], run: Run, **kwargs: object) -> None:
        order.append(run.due)

    run_finished.connect(receiver, dispatch_uid="tests.executed")
    yield order
    run_finished.disconnect(dispatch_uid="tests.executed")


@pytest.fixture
def temporary_job() -> Iterator[Job]:
    """A job registered only for the test, so the test can take it out of the code."""

    def temporary(ctx: RunContext) -> None:
        pass

    registered = registry.register(Job(func=temporary, name="tests.temporary"))
    yield registered
    registry.unregister(registered.name)


# -- catch_up="skip" -----------------------------------------------------------------------


def test_catch_up_skip_counts_missed_slots_and_rearms_after_now(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """Three days down: three digests counted missed, none made up, next is the next 07:00."""
    row = digest()
    rehearsal.advance(timedelta(0))
    assert stored(row).next_due == utc(2026, 3, 7, 12)

    clock.skip(3 * DAY - HOUR)  # back at 10:00 UTC on the 10th, before that day's 07:00 EDT
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert dues(row) == []
    assert row.missed == 3
    assert row.next_due == utc(2026, 3, 10, 11)

    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 10, 11)]
    assert stored(row).missed == 3


def test_catch_up_skip_fires_late_slot_within_grace_with_its_due(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """A fire three minutes late (grace five) still runs, with the slot as its due."""
    row = hourly()
    rehearsal.advance(timedelta(0))
    clock.skip(HOUR + 3 * MINUTE)
    rehearsal.advance(timedelta(0))
    run = Run.objects.get(schedule=row)
    assert run.due == utc(2026, 3, 7, 12)
    assert run.created_at == utc(2026, 3, 7, 12, 3)
    row = stored(row)
    assert row.missed == 0
    assert row.next_due == utc(2026, 3, 7, 13)


@pytest.mark.parametrize(
    ("grace", "late", "fires"),
    [
        (None, 5 * MINUTE, True),
        (None, 5 * MINUTE + SECOND, False),
        (10 * MINUTE, 8 * MINUTE, True),
        (MINUTE, 2 * MINUTE, False),
    ],
    ids=[
        "default-grace-exactly",
        "default-grace-exceeded",
        "row-grace-longer",
        "row-grace-shorter",
    ],
)
def test_catch_up_skip_uses_row_grace_or_setting(
    clock: DrivenClock, rehearsal: Rehearsal, grace: timedelta | None, late: timedelta, fires: bool
) -> None:
    """A fire late by at most its grace (the row's, else WEFT_GRACE) runs; later, it is missed."""
    row = hourly(grace=grace)
    rehearsal.advance(timedelta(0))
    clock.skip(HOUR + late)
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert dues(row) == ([utc(2026, 3, 7, 12)] if fires else [])
    assert row.missed == (0 if fires else 1)
    assert row.next_due == utc(2026, 3, 7, 13)


def test_catch_up_skip_fires_current_slot_within_grace_after_long_downtime(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """Back two minutes after a 07:00 following two days down: older slots missed, that one runs."""
    row = digest()
    rehearsal.advance(timedelta(0))
    clock.skip(2 * DAY + 2 * MINUTE)  # 11:02 UTC on the 9th, 07:02 EDT
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 9, 11)]
    assert row.missed == 2
    assert row.next_due == utc(2026, 3, 10, 11)


# -- catch_up="latest" ---------------------------------------------------------------------


def test_catch_up_latest_runs_most_recent_missed_slot(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """Down from 11:00 to 14:30: one run due 14:00, 12:00 and 13:00 counted missed."""
    row = hourly(catch_up=CatchUp.LATEST)
    rehearsal.advance(timedelta(0))
    clock.skip(3 * HOUR + 30 * MINUTE)
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 14)]
    assert Run.objects.get(schedule=row).created_at == utc(2026, 3, 7, 14, 30)
    assert row.missed == 2
    assert row.next_due == utc(2026, 3, 7, 15)

    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 14), utc(2026, 3, 7, 15)]


def test_catch_up_latest_finds_last_slot_of_sparse_cron(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """A Monday-07:00 row down for five weeks runs once, for the last Monday; four are missed."""
    row = Schedule.objects.create(
        name="weekly",
        job="tests.noop",
        cron="0 7 * * 1",
        timezone=TORONTO,
        catch_up=CatchUp.LATEST,
    )
    rehearsal.advance(timedelta(0))
    assert stored(row).next_due == utc(2026, 3, 9, 11)
    clock.skip(32 * DAY)  # Wednesday 2026-04-08
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert dues(row) == [utc(2026, 4, 6, 11)]
    assert row.missed == 4
    assert row.next_due == utc(2026, 4, 13, 11)


# -- catch_up="all" ------------------------------------------------------------------------


def test_catch_up_all_runs_each_slot_in_window_in_order(
    clock: DrivenClock, rehearsal: Rehearsal, executed: list[datetime | None]
) -> None:
    """Down until 16:00 with a 3-hour window: runs due 13:00 to 16:00 in order, 12:00 missed."""
    row = hourly(catch_up=CatchUp.ALL, catch_up_window=3 * HOUR)
    rehearsal.advance(timedelta(0))
    clock.skip(5 * HOUR)
    rehearsal.advance(timedelta(0))
    slots = [utc(2026, 3, 7, hour) for hour in (13, 14, 15, 16)]
    assert executed == slots
    row = stored(row)
    assert dues(row) == slots
    assert row.missed == 1
    assert row.last_due == utc(2026, 3, 7, 16)
    assert row.next_due == utc(2026, 3, 7, 17)
    assert set(Run.objects.filter(schedule=row).values_list("status", flat=True)) == {
        RunStatus.DONE
    }


def test_catch_up_all_window_defaults_to_setting(
    clock: DrivenClock, rehearsal: Rehearsal, settings: Any
) -> None:
    """Without a window of its own, "all" makes up the slots within WEFT_CATCH_UP_WINDOW."""
    settings.WEFT_CATCH_UP_WINDOW = 2 * HOUR
    row = hourly(catch_up=CatchUp.ALL)
    rehearsal.advance(timedelta(0))
    clock.skip(5 * HOUR + 30 * MINUTE)  # 16:30: the window starts at 14:30
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 15), utc(2026, 3, 7, 16)]
    assert row.missed == 3


# -- overlap -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_overlap_skip_drops_fire_while_previous_run_unfinished() -> None:
    """The 13:00 fire is dropped and counted while the 12:00 run is queued; 14:00 runs."""
    row = Schedule.objects.create(name="every", job="tests.noop", every=HOUR)
    scheduler = Scheduler()
    scheduler.tick(START, Changes())
    scheduler.tick(utc(2026, 3, 7, 12), Changes())
    first = Run.objects.get(schedule=row)
    assert stored(row).last_status == LastStatus.RUNNING

    scheduler.tick(utc(2026, 3, 7, 13), Changes())
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 12)]
    assert row.missed == 1
    assert row.buffered_due is None
    assert row.next_due == utc(2026, 3, 7, 14)

    finish(first.pk, RunStatus.DONE, now=utc(2026, 3, 7, 13, 30), changes=Changes())
    assert stored(row).last_status == LastStatus.OK
    scheduler.tick(utc(2026, 3, 7, 14), Changes())
    assert dues(row) == [utc(2026, 3, 7, 12), utc(2026, 3, 7, 14)]


@pytest.mark.django_db
def test_overlap_buffer_one_starts_waiting_fire_when_previous_finishes() -> None:
    """One fire waits for the running run and starts when it ends; a second one is dropped."""
    row = Schedule.objects.create(
        name="every", job="tests.noop", every=HOUR, overlap=Overlap.BUFFER_ONE
    )
    scheduler = Scheduler()
    scheduler.tick(START, Changes())
    scheduler.tick(utc(2026, 3, 7, 12), Changes())
    first = Run.objects.get(schedule=row)

    scheduler.tick(utc(2026, 3, 7, 13), Changes())
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 12)]
    assert row.buffered_due == utc(2026, 3, 7, 13)
    assert row.missed == 0
    assert row.next_due == utc(2026, 3, 7, 14)

    scheduler.tick(utc(2026, 3, 7, 14), Changes())
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 12)]
    assert row.buffered_due == utc(2026, 3, 7, 13)
    assert row.missed == 1

    finish(first.pk, RunStatus.DONE, now=utc(2026, 3, 7, 14, 10), changes=Changes())
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 12), utc(2026, 3, 7, 13)]
    buffered = Run.objects.get(schedule=row, due=utc(2026, 3, 7, 13))
    assert buffered.created_at == utc(2026, 3, 7, 14, 10)
    assert row.buffered_due is None
    assert row.last_run_id == buffered.pk
    assert row.last_status == LastStatus.RUNNING


@pytest.mark.django_db
def test_overlap_allow_starts_runs_while_previous_unfinished() -> None:
    """With overlap="allow" the 13:00 fire runs although the 12:00 run has not finished."""
    row = Schedule.objects.create(name="every", job="tests.noop", every=HOUR, overlap=Overlap.ALLOW)
    scheduler = Scheduler()
    scheduler.tick(START, Changes())
    scheduler.tick(utc(2026, 3, 7, 12), Changes())
    scheduler.tick(utc(2026, 3, 7, 13), Changes())
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 12), utc(2026, 3, 7, 13)]
    assert set(Run.objects.filter(schedule=row).values_list("status", flat=True)) == {
        RunStatus.QUEUED
    }
    assert row.missed == 0


# -- every ---------------------------------------------------------------------------------


def test_every_first_fire_one_interval_after_row_first_seen(rehearsal: Rehearsal) -> None:
    """A row added at 11:00:20 with every=1h fires at 12:00:20, then 13:00:20: its own grid."""
    rehearsal.advance(20 * SECOND)
    row = Schedule.objects.create(name="every", job="tests.noop", every=HOUR)
    rehearsal.advance(2 * HOUR + 5 * MINUTE)
    assert dues(row) == [utc(2026, 3, 7, 12, 0, 20), utc(2026, 3, 7, 13, 0, 20)]
    assert stored(row).next_due == utc(2026, 3, 7, 14, 0, 20)


def test_every_counts_from_when_scheduler_first_sees_row(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """A row written at 11:00 while no worker runs, first seen at 11:30, fires at 12:30."""
    row = Schedule.objects.create(name="every", job="tests.noop", every=HOUR)
    clock.skip(30 * MINUTE)
    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 12, 30)]


def test_every_keeps_its_grid_after_downtime(clock: DrivenClock, rehearsal: Rehearsal) -> None:
    """After downtime an interval row re-arms on its own grid, not one interval after now."""
    row = Schedule.objects.create(name="every", job="tests.noop", every=HOUR)
    rehearsal.advance(timedelta(0))
    clock.skip(3 * HOUR + 30 * MINUTE)
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert row.missed == 3
    assert row.next_due == utc(2026, 3, 7, 15)
    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 15)]


# -- at ------------------------------------------------------------------------------------


def test_at_past_one_off_fires_once_with_its_due(rehearsal: Rehearsal, worker: Worker) -> None:
    """A one-off due twenty minutes before the worker started fires once, with that due."""
    row = Schedule.objects.create(name="once", job="tests.noop", at=START - 20 * MINUTE)
    rehearsal.advance(timedelta(0))
    run = Run.objects.get(schedule=row)
    assert run.due == utc(2026, 3, 7, 10, 40)
    assert run.created_at == START
    rehearsal.advance(DAY)
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 10, 40)]
    assert row.next_due is None
    assert row.missed == 0


def test_at_future_one_off_fires_at_its_moment(rehearsal: Rehearsal) -> None:
    """A one-off at 13:15 fires at 13:15 and never again."""
    row = Schedule.objects.create(name="once", job="tests.noop", at=utc(2026, 3, 7, 13, 15))
    rehearsal.advance(DAY)
    run = Run.objects.get(schedule=row)
    assert (run.due, run.created_at) == (utc(2026, 3, 7, 13, 15), utc(2026, 3, 7, 13, 15))


def test_at_started_one_off_never_fires_again_when_rearmed(rehearsal: Rehearsal) -> None:
    """A one-off that started does not fire again on re-enable or an `at` moved before the start."""
    row = Schedule.objects.create(name="once", job="tests.noop", at=START - 20 * MINUTE)
    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 10, 40)]

    row = stored(row)
    row.enabled = False
    row.save()
    row.enabled = True
    row.save()
    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 10, 40)]

    row = stored(row)
    row.at = START - 10 * MINUTE  # still before the start at 11:00
    row.save()
    rehearsal.advance(DAY)
    assert dues(row) == [utc(2026, 3, 7, 10, 40)]
    assert stored(row).next_due is None


def test_at_moved_past_its_start_fires_again_at_new_moment(rehearsal: Rehearsal) -> None:
    """A one-off that ran at 11:00, moved to 12:30, fires again at 12:30 with that due."""
    row = Schedule.objects.create(name="once", job="tests.noop", at=START - 20 * MINUTE)
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert row.last_started == START
    row.at = utc(2026, 3, 7, 12, 30)
    row.save()
    rehearsal.advance(DAY)
    assert dues(row) == [utc(2026, 3, 7, 10, 40), utc(2026, 3, 7, 12, 30)]
    assert Run.objects.get(due=utc(2026, 3, 7, 12, 30)).created_at == utc(2026, 3, 7, 12, 30)


def test_at_disabled_before_its_time_does_not_fire(rehearsal: Rehearsal) -> None:
    """A one-off disabled after it was armed and before its moment does not fire."""
    row = Schedule.objects.create(name="once", job="tests.noop", at=utc(2026, 3, 7, 12))
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert row.next_due == utc(2026, 3, 7, 12)
    row.enabled = False
    row.save()
    rehearsal.advance(DAY)
    assert dues(row) == []


def test_at_deleted_before_its_time_does_not_fire(rehearsal: Rehearsal) -> None:
    """A one-off deleted after it was armed and before its moment does not fire."""
    row = Schedule.objects.create(name="once", job="tests.noop", at=utc(2026, 3, 7, 12))
    rehearsal.advance(timedelta(0))
    row.delete()
    rehearsal.advance(DAY)
    assert Run.objects.count() == 0


# -- live edits ----------------------------------------------------------------------------


def test_live_edit_added_row_fires_on_time(rehearsal: Rehearsal, worker: Worker) -> None:
    """A row added at 11:30 while the worker runs fires at its first slot, 07:15 Toronto."""
    rehearsal.advance(30 * MINUTE)
    row = Schedule.objects.create(
        name="late-add", job="tests.noop", cron="15 7 * * *", timezone=TORONTO
    )
    rehearsal.advance(2 * HOUR)
    run = Run.objects.get(schedule=row)
    assert (run.due, run.created_at) == (utc(2026, 3, 7, 12, 15), utc(2026, 3, 7, 12, 15))


def test_live_edit_cron_rearms_from_now(rehearsal: Rehearsal) -> None:
    """Cron edited at 06:00 Toronto from 07:00 to 08:00 fires at 08:00 that day, not at 07:00."""
    row = digest()
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert row.next_due == utc(2026, 3, 7, 12)
    row.cron = "0 8 * * *"
    row.save()
    assert (stored(row).armed, stored(row).next_due) == (False, None)
    rehearsal.advance(timedelta(0))
    assert stored(row).next_due == utc(2026, 3, 7, 13)
    rehearsal.advance(3 * HOUR)
    assert dues(row) == [utc(2026, 3, 7, 13)]


def test_live_edit_timezone_rearms_from_now(rehearsal: Rehearsal) -> None:
    """07:00 moved from Toronto to Vancouver (PST, -8) next fires at 15:00 UTC."""
    row = digest()
    rehearsal.advance(timedelta(0))
    row = stored(row)
    row.timezone = "America/Vancouver"
    row.save()
    rehearsal.advance(timedelta(0))
    assert stored(row).next_due == utc(2026, 3, 7, 15)
    rehearsal.advance(5 * HOUR)
    assert dues(row) == [utc(2026, 3, 7, 15)]


def test_live_edit_every_rearms_from_now(rehearsal: Rehearsal) -> None:
    """An hourly row edited to every two hours at 11:30 next fires at 13:30."""
    row = Schedule.objects.create(name="every", job="tests.noop", every=HOUR)
    rehearsal.advance(30 * MINUTE)
    row = stored(row)
    assert row.next_due == utc(2026, 3, 7, 12)
    row.every = 2 * HOUR
    row.save()
    rehearsal.advance(3 * HOUR)
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 13, 30)]
    assert row.next_due == utc(2026, 3, 7, 15, 30)


def test_live_edit_disable_then_enable_rearms_from_now(rehearsal: Rehearsal) -> None:
    """Slots passed while a row was off are neither fired nor counted once it is back on."""
    row = hourly()
    rehearsal.advance(timedelta(0))
    row = stored(row)
    row.enabled = False
    row.save()
    rehearsal.advance(3 * HOUR + 30 * MINUTE)
    assert dues(row) == []

    row = stored(row)
    row.enabled = True
    row.save()
    rehearsal.advance(timedelta(0))
    row = stored(row)
    assert dues(row) == []
    assert row.missed == 0
    assert row.next_due == utc(2026, 3, 7, 15)
    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 15)]


def test_live_edit_args_or_name_keeps_next_due(rehearsal: Rehearsal) -> None:
    """Renaming a row or changing its args does not re-arm it; the next run gets the new args."""
    row = Schedule.objects.create(
        name="sleeper", job="tests.sleep", args={"seconds": 0}, every=HOUR
    )
    rehearsal.advance(30 * MINUTE)
    row = stored(row)
    row.name = "napper"
    row.args = {"seconds": 0.001}
    row.save()
    row = stored(row)
    assert (row.armed, row.next_due) == (True, utc(2026, 3, 7, 12))
    rehearsal.advance(HOUR)
    run = Run.objects.get(schedule=row)
    assert (run.due, run.args) == (utc(2026, 3, 7, 12), {"seconds": 0.001})


def test_live_edit_saved_from_refreshed_instance_rearms(rehearsal: Rehearsal) -> None:
    """An edit saved from an instance refreshed after another edit is measured against the row."""
    row = Schedule.objects.create(name="every", job="tests.noop", every=HOUR)
    rehearsal.advance(10 * MINUTE)
    mine, theirs = stored(row), stored(row)
    theirs.every = 2 * HOUR
    theirs.save()
    rehearsal.advance(timedelta(0))
    assert stored(row).next_due == utc(2026, 3, 7, 13, 10)

    mine.refresh_from_db()
    mine.every = HOUR
    mine.save()
    rehearsal.advance(timedelta(0))
    assert stored(row).next_due == utc(2026, 3, 7, 12, 10)


def test_live_edit_partially_loaded_row_rearms_only_on_plan_change(rehearsal: Rehearsal) -> None:
    """Rows read with only() or partly refreshed save without re-arming unless the plan changed."""
    row = Schedule.objects.create(name="every", job="tests.noop", every=HOUR)
    rehearsal.advance(30 * MINUTE)

    renamed = Schedule.objects.only("name").get(pk=row.pk)
    renamed.name = "renamed"
    renamed.save()
    renamed.refresh_from_db(fields=["next_due"])
    assert renamed.next_due == utc(2026, 3, 7, 12)

    edited = Schedule.objects.only("name").get(pk=row.pk)
    edited.every = 2 * HOUR
    edited.save()
    rehearsal.advance(timedelta(0))
    assert stored(row).next_due == utc(2026, 3, 7, 13, 30)


@pytest.mark.django_db
def test_live_edit_made_while_row_is_armed_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """An on_gap edit saved between the arming read and its write re-arms from the new plan."""
    row = Schedule.objects.create(name="gap", job="tests.noop", cron="30 2 * * *", timezone=TORONTO)
    first_due = Schedule.first_due

    def edited_meanwhile(self: Schedule, now: datetime) -> datetime | None:
        other = stored(row)
        if other.on_gap != "skip":
            other.on_gap = "skip"
            other.save()
        return first_due(self, now)

    monkeypatch.setattr(Schedule, "first_due", edited_meanwhile)
    Scheduler().tick(START, Changes())
    Scheduler().tick(START, Changes())
    # 02:30 does not exist in Toronto on the 8th: "skip" waits for 02:30 EDT on the 9th.
    assert stored(row).next_due == utc(2026, 3, 9, 6, 30)


# -- a stored row that became unschedulable ------------------------------------------------


def test_unschedulable_row_reported_once_skipped_and_resumed_when_fixed(
    rehearsal: Rehearsal, failures: list[dict[str, Any]], temporary_job: Job
) -> None:
    """A row whose job left the code is reported once, fires nothing, and resumes on its return."""
    row = Schedule.objects.create(name="temporary", job=temporary_job.name, every=HOUR)
    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 12)]

    registry.unregister(temporary_job.name)
    rehearsal.advance(3 * HOUR)
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 12)]
    assert row.missed == 3
    assert "tests.temporary" in row.problem
    assert len(failures) == 1
    assert failures[0]["schedule"].pk == row.pk
    assert failures[0]["run"] is None
    assert failures[0]["error_type"] == "Unschedulable"
    assert "tests.temporary" in failures[0]["message"]

    registry.register(temporary_job)
    rehearsal.advance(HOUR)
    row = stored(row)
    assert dues(row) == [utc(2026, 3, 7, 12), utc(2026, 3, 7, 16)]
    assert row.problem == ""
    assert row.last_status == LastStatus.OK
    assert len(failures) == 1


def test_unschedulable_args_reported_once_and_resumed_when_fixed(
    rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """Stored args that no longer validate are reported once and skipped until they are fixed."""
    row = Schedule.objects.create(
        name="sleeper", job="tests.sleep", args={"seconds": 0}, every=HOUR
    )
    rehearsal.advance(timedelta(0))
    Schedule.objects.filter(pk=row.pk).update(args={"seconds": -1})
    rehearsal.advance(2 * HOUR)
    row = stored(row)
    assert dues(row) == []
    assert "seconds" in row.problem
    assert len(failures) == 1
    assert failures[0]["run"] is None
    assert "tests.sleep" in failures[0]["message"]

    Schedule.objects.filter(pk=row.pk).update(args={"seconds": 0})
    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 14)]
    assert stored(row).problem == ""
    assert len(failures) == 1


# -- no slot fires twice -------------------------------------------------------------------


@pytest.mark.django_db
def test_run_one_per_slot_refuses_second_run_for_same_due() -> None:
    """The database refuses a second run for a schedule's slot."""
    row = hourly()
    slot = utc(2026, 3, 7, 12)
    Run.objects.create(job="tests.noop", schedule=row, due=slot, created_at=slot)
    with pytest.raises(IntegrityError), transaction.atomic():
        Run.objects.create(job="tests.noop", schedule=row, due=slot, created_at=slot + MINUTE)
    assert dues(row) == [slot]


@pytest.mark.django_db
def test_scheduler_two_instances_fire_due_row_once() -> None:
    """Two schedulers ticking the same due row one after the other make one run."""
    row = hourly()
    Scheduler().tick(START, Changes())
    first, second = Scheduler(), Scheduler()
    assert first.tick(utc(2026, 3, 7, 12), Changes()) is True
    assert second.tick(utc(2026, 3, 7, 12), Changes()) is False
    assert second.tick(utc(2026, 3, 7, 12, 1), Changes()) is False
    assert dues(row) == [utc(2026, 3, 7, 12)]


@pytest.mark.django_db
def test_scheduler_slot_that_already_fired_is_not_fired_again() -> None:
    """A row pointing again at a slot that has a run moves on without a second run."""
    row = hourly(overlap=Overlap.ALLOW)  # so that the unfinished first run does not hold it
    scheduler = Scheduler()
    scheduler.tick(START, Changes())
    scheduler.tick(utc(2026, 3, 7, 12), Changes())
    # As if another process had read the row before this one moved it on.
    Schedule.objects.filter(pk=row.pk).update(next_due=utc(2026, 3, 7, 12))
    first = Run.objects.get(schedule=row)
    scheduler.tick(utc(2026, 3, 7, 12, 1), Changes())
    assert dues(row) == [utc(2026, 3, 7, 12)]
    row = stored(row)
    assert row.next_due == utc(2026, 3, 7, 13)
    assert row.last_run_id == first.pk


@pytest.mark.django_db(transaction=True)
def test_scheduler_concurrent_ticks_fire_each_slot_once() -> None:
    """Schedulers ticking at once on their own connections fire each due slot once."""
    rows = [hourly(f"hourly {number}") for number in range(20)]
    Scheduler().tick(START, Changes())
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def tick() -> None:
        try:
            barrier.wait()
            Scheduler(batch_size=5).tick(utc(2026, 3, 7, 12), Changes())
            Scheduler(batch_size=5).tick(utc(2026, 3, 7, 12), Changes())
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=tick) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    while Scheduler().tick(utc(2026, 3, 7, 12), Changes()):
        pass
    assert Run.objects.count() == len(rows)
    for row in rows:
        assert dues(row) == [utc(2026, 3, 7, 12)]


# -- what a run receives, and a run that raises --------------------------------------------


def test_run_receives_its_due_not_its_start_time(clock: DrivenClock, rehearsal: Rehearsal) -> None:
    """A run fired three minutes late is given its slot as due; it was created at the later now."""
    row = hourly(job="tests.due")
    rehearsal.advance(timedelta(0))
    clock.skip(HOUR + 3 * MINUTE)
    rehearsal.advance(timedelta(0))
    run = Run.objects.get(schedule=row)
    assert run.status == RunStatus.DONE
    assert run.result == "2026-03-07T12:00:00+00:00"
    assert run.due == utc(2026, 3, 7, 12)
    assert run.created_at == utc(2026, 3, 7, 12, 3)
    assert stored(row).last_due == utc(2026, 3, 7, 12)


def test_failing_run_lands_failed_on_row_and_schedule_goes_on(
    rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """A raising run lands failed with message and type; the signal hears it; the row goes on."""
    row = hourly(job="tests.broken")
    rehearsal.advance(HOUR)
    run = Run.objects.get(schedule=row)
    assert run.status == RunStatus.FAILED
    assert (run.error_type, run.error_message) == ("RuntimeError", "broken has no rows to work on")
    row = stored(row)
    assert row.last_status == LastStatus.FAILED
    assert row.last_error_type == "RuntimeError"
    assert row.last_error_message == "broken has no rows to work on"
    assert row.last_run_id == run.pk
    assert len(failures) == 1
    assert failures[0]["run"].pk == run.pk
    assert failures[0]["schedule"].pk == row.pk
    assert failures[0]["error_type"] == "RuntimeError"
    assert failures[0]["message"] == "broken has no rows to work on"

    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 12), utc(2026, 3, 7, 13)]
    assert len(failures) == 2


# -- cost ----------------------------------------------------------------------------------


def idle_rows(count: int) -> None:
    """Add ``count`` daily rows and arm them at START, so none is due during the test."""
    existing = Schedule.objects.count()
    Schedule.objects.bulk_create(
        Schedule(name=f"idle {existing + number}", job="tests.noop", every=DAY)
        for number in range(count)
    )
    while Scheduler().tick(START, Changes()):
        pass
    assert not Schedule.objects.filter(armed=False).exists()


def queries_of_one_tick(now: datetime) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert Scheduler().tick(now, Changes()) is False
    return [query["sql"] for query in captured.captured_queries]


@pytest.mark.django_db
def test_scheduler_tick_cost_does_not_grow_with_idle_schedules() -> None:
    """A tick over 500 idle armed rows makes as many queries as one over 10."""
    idle_rows(10)
    with_ten = queries_of_one_tick(START + HOUR)
    idle_rows(490)
    with_five_hundred = queries_of_one_tick(START + HOUR)
    assert len(with_five_hundred) == len(with_ten)
    assert len(with_ten) <= 4


@pytest.mark.django_db
def test_scheduler_due_query_filters_on_next_due() -> None:
    """The tick reads only unarmed rows and due rows, through the partially indexed next_due."""
    idle_rows(10)
    selects = [
        sql
        for sql in queries_of_one_tick(START + HOUR)
        if sql.startswith("SELECT") and "django_weft_schedule" in sql
    ]
    assert any('"next_due" <=' in sql for sql in selects), selects
    # No read of every row: each one is limited to rows that are unarmed or due.
    assert all('"armed"' in sql.partition("WHERE")[2] for sql in selects), selects


# -- the worker step -----------------------------------------------------------------------


def test_worker_tick_returns_false_when_idle_and_true_when_it_fired(
    clock: DrivenClock, worker: Worker
) -> None:
    """Worker.tick() says whether it did work: arming or firing yes, nothing due no."""
    row = hourly()
    worker.start()
    assert worker.tick() is True  # armed the new row
    assert worker.tick() is False
    clock.skip(HOUR)
    assert worker.tick() is True
    assert Run.objects.get(schedule=row).status == RunStatus.DONE
    assert worker.tick() is False


# -- decide(), the catch-up rule on its own ------------------------------------------------


def armed(due: datetime, **fields: Any) -> Schedule:
    """An unsaved hourly row armed for ``due``."""
    return Schedule(
        name="hourly",
        job="tests.noop",
        cron="0 * * * *",
        timezone="UTC",
        armed=True,
        next_due=due,
        **fields,
    )


@pytest.mark.parametrize(
    ("catch_up", "fire", "missed"),
    [
        (CatchUp.SKIP, [], 3),
        (CatchUp.LATEST, [utc(2026, 3, 7, 14)], 2),
        (CatchUp.ALL, [utc(2026, 3, 7, 13), utc(2026, 3, 7, 14)], 1),
    ],
)
def test_decide_applies_catch_up_policy(catch_up: str, fire: list[datetime], missed: int) -> None:
    """Slots 12:00-14:00 passed by 14:30 (grace 5 min, window 2 h) are fired or missed by policy."""
    decision = decide(
        armed(utc(2026, 3, 7, 12), catch_up=catch_up),
        utc(2026, 3, 7, 14, 30),
        grace=5 * MINUTE,
        window=2 * HOUR,
    )
    assert decision.fire == fire
    assert decision.missed == missed
    assert decision.next_due == utc(2026, 3, 7, 15)


def test_decide_one_off_fires_its_due_however_late() -> None:
    """A one-off fires once with its own due, a week late, and has no next slot."""
    row = Schedule(name="once", job="tests.noop", at=START, armed=True, next_due=START)
    decision = decide(row, START + 7 * DAY, grace=5 * MINUTE, window=DAY)
    assert (decision.fire, decision.next_due, decision.missed) == ([START], None, 0)


def test_unschedulable_one_off_fires_with_its_due_once_fixed(
    clock: DrivenClock, rehearsal: Rehearsal, failures: list[dict[str, Any]], temporary_job: Job
) -> None:
    """A one-off whose job is gone at its time is reported once and fires when the job returns."""
    due = clock.now() + HOUR
    row = Schedule.objects.create(name="once", job=temporary_job.name, at=due)
    rehearsal.advance(timedelta(0))
    registry.unregister(temporary_job.name)
    rehearsal.advance(2 * HOUR)
    assert dues(row) == []
    assert len(failures) == 1
    registry.register(temporary_job)
    rehearsal.advance(5 * timedelta(minutes=1))
    assert dues(row) == [due], "it fired once, with the due it had"
    rehearsal.advance(HOUR)
    assert dues(row) == [due]


def test_at_forget_last_run_fires_the_one_off_again(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """Clearing a one-off's last-run record makes it fire again, with its own due."""
    due = clock.now() - timedelta(minutes=20)
    row = Schedule.objects.create(name="once", job="tests.noop", at=due)
    rehearsal.advance(HOUR)
    first = Run.objects.get(schedule=row)
    stored(row).forget_last_run()
    row = stored(row)
    assert (row.last_status, row.last_started, row.last_run_id) == ("", None, None)
    rehearsal.advance(HOUR)
    again = Run.objects.get(schedule=row)
    assert again.pk != first.pk
    assert again.due == due
    assert Run.objects.filter(pk=first.pk, schedule=None).exists(), "the first run stays in history"


def test_stale_instance_save_keeps_what_the_scheduler_wrote(rehearsal: Rehearsal) -> None:
    """Saving an instance read before a fire does not roll back next_due or the last-run record."""
    stale = Schedule.objects.create(name="hourly", job="tests.noop", every=HOUR)
    rehearsal.advance(HOUR)
    fresh = stored(stale)
    assert (fresh.last_status, fresh.next_due) == (LastStatus.OK, utc(2026, 3, 7, 13))
    stale.args = {}
    stale.save()
    kept = stored(stale)
    assert (kept.last_status, kept.last_run_id, kept.next_due) == (
        LastStatus.OK,
        fresh.last_run_id,
        utc(2026, 3, 7, 13),
    )


def test_catch_up_skip_after_a_long_outage_fires_only_what_is_within_grace(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """Five hours down for a one-second schedule: the slots within grace run, the rest count."""
    row = Schedule.objects.create(
        name="busy", job="tests.noop", every=timedelta(seconds=1), grace=timedelta(seconds=2)
    )
    rehearsal.advance(timedelta(0))
    armed_at = clock.now()
    rehearsal.restart(down=timedelta(hours=5))
    rehearsal.advance(timedelta(0))
    now = clock.now()
    assert dues(row) == [now - timedelta(seconds=2), now - timedelta(seconds=1), now]
    assert stored(row).missed == 10_000, "counted up to the documented cap"
    assert armed_at < now


def test_catch_up_all_after_a_long_outage_makes_up_the_window_only(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """A long outage with catch_up="all" makes up the slots of its window, newest included."""
    row = Schedule.objects.create(
        name="busy",
        job="tests.noop",
        every=timedelta(seconds=1),
        catch_up=CatchUp.ALL,
        catch_up_window=timedelta(seconds=5),
        grace=timedelta(0),
    )
    rehearsal.advance(timedelta(0))
    rehearsal.restart(down=timedelta(hours=5))
    rehearsal.advance(timedelta(0))
    now = clock.now()
    assert dues(row) == [now - timedelta(seconds=s) for s in range(5, -1, -1)]


def test_refused_one_off_is_not_started_and_fires_once_allowed(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """A one-off refused by its job's concurrency limit fires later with its own due."""
    from django_weft.operations import start
    from example_project.shell.jobs import shell

    rehearsal.advance(timedelta(0))  # the worker registers its process
    blocker = start(shell, {"command": "long", "lines": 1})
    assert blocker.created_at == clock.now(), "started on the worker's clock"
    Run.objects.filter(pk=blocker.pk).update(status=RunStatus.RUNNING, worker=worker.process)
    due = clock.now() - timedelta(minutes=5)
    row = Schedule.objects.create(
        name="once", job="shell.run", args={"command": "ls", "lines": 0}, at=due
    )
    rehearsal.advance(timedelta(seconds=1))
    refused = stored(row)
    assert (refused.last_status, refused.last_error_type) == (
        LastStatus.FAILED,
        "ConcurrencyLimitReached",
    )
    assert refused.last_started is None, "a refused start did not start"
    assert dues(row) == []
    assert [f["error_type"] for f in failures] == ["ConcurrencyLimitReached"]

    assert worker.process is not None
    finish(
        blocker.pk,
        RunStatus.DONE,
        now=clock.now(),
        claim=Claim(worker.process.pk, 0),
        changes=Changes(),
    )
    rehearsal.advance(timedelta(minutes=2))
    assert dues(row) == [due]
    assert stored(row).last_status == LastStatus.OK


def test_unreadable_stored_plan_is_reported_once_and_parked(
    rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """A row whose stored cron no longer reads is reported once and fires nothing."""
    row = hourly()
    Schedule.objects.filter(pk=row.pk).update(cron="61 * * * *", armed=False, next_due=None)
    rehearsal.advance(3 * HOUR)
    parked = stored(row)
    assert dues(row) == []
    assert "61 * * * *" in parked.problem
    assert len(failures) == 1
    assert failures[0]["error_type"] == "Unschedulable"


def test_live_edit_by_bulk_update_rearms_from_now(rehearsal: Rehearsal) -> None:
    """A plan changed by QuerySet.update() (no save()) is re-armed from now, as in a form."""
    row = digest()
    rehearsal.advance(timedelta(0))
    assert stored(row).next_due == utc(2026, 3, 7, 12)
    Schedule.objects.filter(pk=row.pk).update(cron="0 8 * * *")
    assert (stored(row).armed, stored(row).next_due) == (False, None)
    rehearsal.advance(timedelta(days=1))
    assert dues(row) == [utc(2026, 3, 7, 13)], "08:00 Toronto; the old 07:00 slot did not fire"


def test_live_edit_by_bulk_update_reenabled_rearms_from_now(rehearsal: Rehearsal) -> None:
    """A row switched back on by QuerySet.update() fires nothing for the slots it was off."""
    row = hourly()
    rehearsal.advance(timedelta(0))
    Schedule.objects.filter(pk=row.pk).update(enabled=False)
    rehearsal.advance(3 * HOUR + 30 * MINUTE)
    Schedule.objects.filter(pk=row.pk).update(enabled=True)
    rehearsal.advance(HOUR)
    assert dues(row) == [utc(2026, 3, 7, 15)]
    assert stored(row).missed == 0


def test_scheduler_own_updates_do_not_rearm(rehearsal: Rehearsal) -> None:
    """Firing and recording runs (updates of other columns) leave the row armed."""
    row = hourly()
    rehearsal.advance(2 * HOUR)
    assert dues(row) == [utc(2026, 3, 7, 12), utc(2026, 3, 7, 13)]
    assert (stored(row).armed, stored(row).next_due) == (True, utc(2026, 3, 7, 14))

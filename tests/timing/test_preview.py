"""Tests for the preview (DESIGN §2): what every schedule will fire, without firing it.

``django_weft.timing.preview.preview()`` lists the fires; ``manage.py runjobs --plan`` prints
them, one line per fire in time order, with the due in UTC and on the schedule's wall
clock, DST-moved fires marked. Expected instants are tz facts: Toronto springs forward
2026-03-08 02:00 -> 03:00 EDT (07:00 UTC) and falls back 2026-11-01 02:00 -> 01:00 EST
(06:00 UTC); Berlin springs forward 2026-03-29 02:00 -> 03:00 CEST and falls back
2026-10-25 03:00 -> 02:00 CET (both at 01:00 UTC).
"""

from __future__ import annotations

import ast
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from django.test import override_settings

from django_weft.engine.schedules.previews import enabled_schedules
from django_weft.engine.schedules.scheduler import Scheduler
from django_weft.models import Run, Schedule, WorkerProcess
from django_weft.timing import preview as preview_module
from django_weft.timing.clocks import Clock
from django_weft.timing.cron import CronPlan
from django_weft.timing.plans import AtPlan, EveryPlan, Plan
from django_weft.timing.preview import (
    Period,
    PlannedRow,
    PreviewLine,
    parse_period,
    preview,
    upcoming,
)

TORONTO = "America/Toronto"
BERLIN = "Europe/Berlin"


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    """An aware UTC datetime."""
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


class FixedClock(Clock):
    """A clock that always says 2026-03-07 11:00 UTC (for the default ``--since``)."""

    def now(self) -> datetime:
        return utc(2026, 3, 7, 11)

    def sleep_until(self, moment: datetime | None, wake: threading.Event, longest: float) -> None:
        raise AssertionError("the preview must not wait")


def schedule(name: str, **fields: Any) -> Schedule:
    """A saved tests.noop schedule."""
    return Schedule.objects.create(name=name, job="tests.noop", **fields)


def plan(*argv: str) -> list[str]:
    """The lines ``runjobs --plan`` prints (the header first)."""
    out = StringIO()
    call_command("runjobs", "--plan", *argv, stdout=out)
    return out.getvalue().splitlines()


def dues(lines: list[PreviewLine]) -> list[datetime]:
    """The due of each preview line."""
    return [line.due for line in lines]


# --- parse_period ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "length", "words"),
    [
        ("36h", timedelta(hours=36), "36 hours"),
        ("7d", timedelta(days=7), "7 days"),
        ("1d12h", timedelta(days=1, hours=12), "1 day 12 hours"),
        ("90m", timedelta(minutes=90), "90 minutes"),
        ("2w", timedelta(weeks=2), "2 weeks"),
        ("1w", timedelta(weeks=1), "1 week"),
        ("1h", timedelta(hours=1), "1 hour"),
        ("45s", timedelta(seconds=45), "45 seconds"),
        (" 7D ", timedelta(days=7), "7 days"),
        ("0d12h", timedelta(hours=12), "12 hours"),
        ("1d1d", timedelta(days=2), "2 days"),
    ],
)
def test_parse_period_valid(text: str, length: timedelta, words: str) -> None:
    """A number and a unit (w, d, h, m, s), possibly chained, is that length, said in its units."""
    assert parse_period(text) == Period(length, words)


@pytest.mark.parametrize("text", ["", "   ", "7", "7x", "0h", "0d0h", "-1d", "1.5h", "d", "1d 12h"])
def test_parse_period_invalid(text: str) -> None:
    """Empty, unitless, zero, negative or malformed durations raise ValueError naming the text."""
    with pytest.raises(ValueError, match="duration") as caught:
        parse_period(text)
    assert f'"{text}"' in str(caught.value)


@pytest.mark.parametrize(
    ("length", "words"),
    [
        (timedelta(hours=36), "1 day 12 hours"),
        (timedelta(minutes=90), "1 hour 30 minutes"),
        (timedelta(days=7), "7 days"),
        (timedelta(seconds=61), "1 minute 1 second"),
    ],
)
def test_period_of_timedelta(length: timedelta, words: str) -> None:
    """A period given as a timedelta is said in days, hours, minutes and seconds."""
    assert Period.of(length) == Period(length, words)


@pytest.mark.parametrize("length", [timedelta(0), timedelta(hours=-1)])
def test_period_of_not_positive(length: timedelta) -> None:
    """A zero or negative timedelta is refused."""
    with pytest.raises(ValueError, match="positive"):
        Period.of(length)


# --- preview() ---------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("zone", "since", "expected"),
    [
        pytest.param(
            TORONTO,
            utc(2026, 3, 7),
            [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)],
            id="toronto",
        ),
        pytest.param(
            BERLIN,
            utc(2026, 3, 28),
            [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)],
            id="berlin",
        ),
    ],
)
def test_preview_gap_shift(zone: str, since: datetime, expected: list[datetime]) -> None:
    """02:30 on a spring-forward day is shown at the end of the gap (on_gap shift), marked."""
    row = schedule("nightly", cron="30 2 * * *", timezone=zone)
    lines = preview(since, timedelta(days=3), [row])
    assert dues(lines) == expected
    assert [line.note for line in lines] == ["", "shifted", ""]
    assert [line.mark == "" for line in lines] == [True, False, True]
    assert "DST gap" in lines[1].mark
    assert "02:30" in lines[1].mark
    assert "moved" in lines[1].mark
    assert {line.schedule for line in lines} == {"nightly"}
    assert {line.zone for line in lines} == {zone}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("zone", "since", "skipped"),
    [
        pytest.param(TORONTO, utc(2026, 3, 7), utc(2026, 3, 8, 7, 30), id="toronto"),
        pytest.param(BERLIN, utc(2026, 3, 28), utc(2026, 3, 29, 1, 30), id="berlin"),
    ],
)
def test_preview_gap_skip(zone: str, since: datetime, skipped: datetime) -> None:
    """With on_gap skip, 02:30 on a spring-forward day is listed but marked as skipped."""
    row = schedule("nightly", cron="30 2 * * *", timezone=zone, on_gap="skip")
    lines = preview(since, timedelta(days=3), [row])
    assert len(lines) == 3
    assert lines[1].due == skipped
    assert lines[1].note == "skipped"
    assert "DST gap" in lines[1].mark
    assert "02:30" in lines[1].mark
    assert "skipped" in lines[1].mark
    assert lines[0].mark == lines[2].mark == ""


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("zone", "cron", "since", "first", "second"),
    [
        pytest.param(
            TORONTO,
            "30 1 * * *",
            utc(2026, 11, 1),
            utc(2026, 11, 1, 5, 30),
            utc(2026, 11, 1, 6, 30),
            id="toronto",
        ),
        pytest.param(
            BERLIN,
            "30 2 * * *",
            utc(2026, 10, 24, 22),
            utc(2026, 10, 25, 0, 30),
            utc(2026, 10, 25, 1, 30),
            id="berlin",
        ),
    ],
)
def test_preview_fold_both(
    zone: str, cron: str, since: datetime, first: datetime, second: datetime
) -> None:
    """With on_fold both, a wall time that happens twice fires twice that day, the second
    marked as the repeat, the first as on the day of the change."""
    row = schedule("twice", cron=cron, timezone=zone, on_fold="both")
    lines = preview(since, timedelta(days=1), [row])
    assert dues(lines) == [first, second]
    assert [line.note for line in lines] == ["", "repeated"]
    assert lines[0].mark.startswith("DST day: clocks change from ")
    assert "DST fold" in lines[1].mark
    assert "second" in lines[1].mark


@pytest.mark.django_db
def test_preview_fold_first() -> None:
    """With the default on_fold first, a repeated wall time is shown once, not as a
    repeat: only as on the day the clocks change."""
    row = schedule("once", cron="30 1 * * *", timezone=TORONTO)
    lines = preview(utc(2026, 11, 1), timedelta(days=1), [row])
    assert dues(lines) == [utc(2026, 11, 1, 5, 30)]
    assert (lines[0].note, lines[0].mark) == ("", "DST day: clocks change from EDT to EST")


@pytest.mark.django_db
def test_preview_marks_each_day_of_a_clock_change_once_per_schedule() -> None:
    """Over a week holding a spring-forward day, a daily schedule the change does not move
    is marked on that day only, and an hourly one at its first fire of that day only
    (not 23 times); a schedule in UTC is never marked; upcoming() marks as preview() does."""
    daily = schedule("digest", cron="0 7 * * *", timezone=TORONTO)
    hourly = schedule("hourly", cron="15 * * * *", timezone=TORONTO)
    utc_daily = schedule("utc", cron="0 7 * * *", timezone="UTC")
    lines = preview(utc(2026, 3, 5), timedelta(days=7), [daily, hourly, utc_daily])
    marked = [(line.schedule, line.local, line.mark) for line in lines if line.mark]
    spring = "DST day: clocks change from EST to EDT"
    assert marked == [
        ("hourly", "2026-03-08 00:15 EST", spring),
        ("digest", "2026-03-08 07:00 EDT", spring),
    ]
    week = upcoming(daily, utc(2026, 3, 5), 7)
    assert [line.mark for line in week] == ["", "", "", spring, "", "", ""]


@pytest.mark.django_db
def test_preview_hourly_cron_through_fold() -> None:
    """An hourly cron fires every real hour through the fall-back fold, the second 01:00 marked."""
    row = schedule("hourly", cron="0 * * * *", timezone=TORONTO)
    lines = preview(utc(2026, 11, 1, 3), timedelta(hours=6), [row])
    assert dues(lines) == [utc(2026, 11, 1, hour) for hour in range(4, 10)]
    assert [line.note for line in lines] == ["", "", "repeated", "", "", ""]


@pytest.mark.django_db
def test_preview_hourly_cron_through_gap() -> None:
    """An hourly cron fires every real hour through the spring-forward gap, with no double fire."""
    row = schedule("hourly", cron="0 * * * *", timezone=TORONTO)
    lines = preview(utc(2026, 3, 8, 5), timedelta(hours=4), [row])
    assert dues(lines) == [utc(2026, 3, 8, hour) for hour in range(6, 10)]


@pytest.mark.django_db
def test_preview_step_hour_cron_through_gap_skips() -> None:
    """An hour step skips the missing wall time whatever on_gap says; the slot is marked skipped."""
    row = schedule("two-hourly", cron="30 */2 * * *", timezone=TORONTO, on_gap="shift")
    lines = preview(utc(2026, 3, 8, 5), timedelta(hours=4), [row])
    # 00:30 EST = 05:30 UTC; 02:30 does not exist (07:30 UTC read as EST); 04:30 EDT = 08:30.
    assert dues(lines) == [utc(2026, 3, 8, 5, 30), utc(2026, 3, 8, 7, 30), utc(2026, 3, 8, 8, 30)]
    assert [line.note for line in lines] == ["", "skipped", ""]
    assert [line.fires for line in lines] == [True, False, True]
    assert "02:30 does not exist, skipped" in lines[1].mark


@pytest.mark.django_db
def test_preview_interval_unarmed() -> None:
    """An interval row not yet armed is shown from one interval after the start of the preview."""
    row = schedule("every", every=timedelta(hours=20))
    lines = preview(utc(2026, 3, 7), timedelta(days=3), [row])
    assert dues(lines) == [utc(2026, 3, 7, 20), utc(2026, 3, 8, 16), utc(2026, 3, 9, 12)]
    assert {line.zone for line in lines} == {"UTC"}
    assert all(line.mark == "" for line in lines)


@pytest.mark.django_db
def test_preview_interval_armed_keeps_grid() -> None:
    """An armed interval row is shown on its own grid (through next_due), not from since."""
    row = schedule("every", every=timedelta(hours=6))
    Schedule.objects.filter(pk=row.pk).update(armed=True, next_due=utc(2026, 3, 7, 5))
    row.refresh_from_db()
    lines = preview(utc(2026, 3, 7), timedelta(days=1), [row])
    assert dues(lines) == [utc(2026, 3, 7, hour) for hour in (5, 11, 17, 23)]


@pytest.mark.django_db
def test_preview_at_overdue() -> None:
    """A one-off due before the preview that never ran is shown at the start, marked overdue."""
    row = schedule("late", at=utc(2026, 3, 6, 9, 15))
    lines = preview(utc(2026, 3, 7), timedelta(days=1), [row])
    assert dues(lines) == [utc(2026, 3, 7)]
    assert "overdue" in lines[0].mark
    assert "2026-03-06 09:15" in lines[0].mark


@pytest.mark.django_db
def test_preview_at_future() -> None:
    """A one-off inside the period is shown once at its moment; one after the period is not."""
    inside = schedule("inside", at=utc(2026, 3, 7, 12))
    after = schedule("after", at=utc(2026, 3, 9))
    lines = preview(utc(2026, 3, 7), timedelta(days=1), [inside, after])
    assert [(line.schedule, line.due, line.mark) for line in lines] == [
        ("inside", utc(2026, 3, 7, 12), "")
    ]


@pytest.mark.django_db
def test_preview_at_already_started() -> None:
    """A one-off that already started at or after its moment is not shown again."""
    row = schedule("done", at=utc(2026, 3, 6))
    Schedule.objects.filter(pk=row.pk).update(last_started=utc(2026, 3, 6, 0, 1))
    row.refresh_from_db()
    assert preview(utc(2026, 3, 5), timedelta(days=3), [row]) == []


@pytest.mark.django_db
def test_preview_since_in_another_zone() -> None:
    """A since given in another zone is the same instant: lines are due and rendered in UTC."""
    row = schedule("late", at=datetime(2026, 3, 6, 9, 15, tzinfo=ZoneInfo(TORONTO)))
    since = datetime(2026, 3, 7, 6, 0, tzinfo=ZoneInfo(TORONTO))
    lines = preview(since, timedelta(days=1), [row])
    assert dues(lines) == [utc(2026, 3, 7, 11)]
    assert lines[0].due.utcoffset() == timedelta(0)
    assert lines[0].render().startswith("2026-03-07 11:00 UTC")
    assert "overdue since 2026-03-06 14:15 UTC" in lines[0].mark


def test_preview_naive_since() -> None:
    """A naive since is refused: it names no instant."""
    with pytest.raises(ValueError, match="timezone-aware"):
        preview(datetime(2026, 3, 7), timedelta(days=1), [])


@pytest.mark.django_db
def test_preview_unplannable_stored_row() -> None:
    """A stored row whose zone became invalid (written around save) is reported, not a crash."""
    row = schedule("broken", cron="0 7 * * *", timezone=TORONTO)
    Schedule.objects.filter(pk=row.pk).update(timezone="Mars/Olympus")
    row.refresh_from_db()
    lines = preview(utc(2026, 3, 7), timedelta(days=1), [row])
    assert len(lines) == 1
    assert "cannot be planned" in lines[0].mark
    assert "Mars/Olympus" in lines[0].mark


@pytest.mark.django_db
def test_preview_time_order_across_schedules() -> None:
    """Fires of several schedules are merged in time order."""
    rows = [
        schedule("a-daily", cron="0 7 * * *", timezone=TORONTO),
        schedule("b-every", every=timedelta(hours=5)),
        schedule("c-once", at=utc(2026, 3, 7, 13)),
    ]
    lines = preview(utc(2026, 3, 7), timedelta(days=1), rows)
    assert dues(lines) == sorted(dues(lines))
    assert [(line.schedule, line.due) for line in lines] == [
        ("b-every", utc(2026, 3, 7, 5)),
        ("b-every", utc(2026, 3, 7, 10)),
        ("a-daily", utc(2026, 3, 7, 12)),
        ("c-once", utc(2026, 3, 7, 13)),
        ("b-every", utc(2026, 3, 7, 15)),
        ("b-every", utc(2026, 3, 7, 20)),
    ]


@pytest.mark.django_db
def test_preview_rows_sharing_a_plan() -> None:
    """Rows with the same cron, zone and policies each get their own lines; others differ."""
    schedule("a", cron="30 2 * * *", timezone=TORONTO)
    schedule("b", cron="30 2 * * *", timezone=TORONTO)
    schedule("c", cron="30 2 * * *", timezone=TORONTO, on_gap="skip")
    lines = preview(utc(2026, 3, 8), timedelta(days=1), enabled_schedules())
    assert [(line.schedule, line.due, line.note) for line in lines] == [
        ("a", utc(2026, 3, 8, 7), "shifted"),
        ("b", utc(2026, 3, 8, 7), "shifted"),
        ("c", utc(2026, 3, 8, 7, 30), "skipped"),
    ]


# --- rows that were never stored -----------------------------------------------------------


@dataclass
class PlainRow:
    """A schedule that is no model: the preview needs only what PlannedRow names."""

    name: str
    cron: str = ""
    timezone: str = ""
    every: timedelta | None = None
    at: datetime | None = None
    on_gap: str = "shift"
    on_fold: str = "first"

    def timezone_name(self) -> str:
        return self.timezone or "UTC"

    def plan(self, origin: datetime) -> Plan:
        if self.cron:
            return CronPlan(self.cron, self.timezone, on_gap=self.on_gap, on_fold=self.on_fold)
        if self.every is not None:
            return EveryPlan(self.every, origin + self.every)
        assert self.at is not None
        return AtPlan(self.at)

    def first_due(self, now: datetime) -> datetime | None:
        if self.at is not None:
            return self.at
        fire = self.plan(now).next_fire(now)
        return fire.due if fire else None


def test_preview_plans_rows_that_are_not_models() -> None:
    """The preview reads no database: any row shaped like PlannedRow is planned."""
    rows: list[PlannedRow] = [
        PlainRow("digest", cron="30 2 * * *", timezone=TORONTO),
        PlainRow("often", every=timedelta(hours=12)),
        PlainRow("once", at=utc(2026, 3, 8, 9)),
    ]
    lines = preview(utc(2026, 3, 8), timedelta(days=1), rows)
    assert [(line.schedule, line.due, line.note) for line in lines] == [
        ("digest", utc(2026, 3, 8, 7), "shifted"),
        ("once", utc(2026, 3, 8, 9), ""),
        ("often", utc(2026, 3, 8, 12), ""),
        ("often", utc(2026, 3, 9), ""),
    ]
    assert [line.due for line in upcoming(rows[1], utc(2026, 3, 8), 2)] == [
        utc(2026, 3, 8, 12),
        utc(2026, 3, 9),
    ]


def test_preview_module_imports_no_models() -> None:
    """timing/ is pure: the preview imports no model, not even for the type checker."""
    tree = ast.parse(Path(preview_module.__file__ or "").read_text())
    imported = [
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    ] + [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert [name for name in imported if name.startswith("django_weft.models")] == []
    assert [name for name in imported if name.startswith("django.db")] == []


# --- runjobs --plan ----------------------------------------------------------------------


@pytest.mark.django_db
def test_runjobs_plan_gap_shift_lines() -> None:
    """--plan prints one line per fire: UTC due, the zone's wall time, the name, the gap marked."""
    schedule("nightly", cron="30 2 * * *", timezone=TORONTO)
    header, *lines = plan("3d", "--since", "2026-03-07T00:00:00Z")
    assert "2026-03-07 00:00 UTC" in header
    assert len(lines) == 3
    assert lines[0].startswith("2026-03-07 07:30 UTC")
    assert "2026-03-07 02:30 EST (America/Toronto)" in lines[0]
    assert lines[1].startswith("2026-03-08 07:00 UTC")
    assert "2026-03-08 03:00 EDT (America/Toronto)" in lines[1]
    assert "DST gap: 02:30" in lines[1]
    assert "moved" in lines[1]
    assert lines[2].startswith("2026-03-09 06:30 UTC")
    assert "2026-03-09 02:30 EDT (America/Toronto)" in lines[2]
    assert all("nightly" in line for line in lines)
    assert "DST" not in lines[0] + lines[2]


@pytest.mark.django_db
def test_runjobs_plan_gap_skip_lines() -> None:
    """--plan marks the 02:30 of a spring-forward day as skipped when on_gap is skip."""
    schedule("nightly", cron="30 2 * * *", timezone=TORONTO, on_gap="skip")
    _, *lines = plan("3d", "--since", "2026-03-07T00:00:00Z")
    marked = [line for line in lines if "DST" in line]
    assert len(marked) == 1
    assert marked[0].startswith("2026-03-08 ")
    assert "skipped" in marked[0]
    assert "02:30" in marked[0]


@pytest.mark.django_db
def test_runjobs_plan_fold_both_lines() -> None:
    """--plan shows both 01:30s of the fall-back day with on_fold both, the second marked."""
    schedule("twice", cron="30 1 * * *", timezone=TORONTO, on_fold="both")
    _, *lines = plan("1d", "--since", "2026-11-01T00:00:00Z")
    assert len(lines) == 2
    assert lines[0].startswith("2026-11-01 05:30 UTC")
    assert "2026-11-01 01:30 EDT (America/Toronto)" in lines[0]
    assert lines[0].endswith("[DST day: clocks change from EDT to EST]")
    assert lines[1].startswith("2026-11-01 06:30 UTC")
    assert "2026-11-01 01:30 EST (America/Toronto)" in lines[1]
    assert "DST fold: 01:30" in lines[1]


@pytest.mark.django_db
def test_runjobs_plan_mixed_schedules() -> None:
    """--plan merges an hourly cron, an interval and an overdue one-off in time order."""
    schedule("hourly", cron="0 * * * *", timezone=BERLIN)
    schedule("every", every=timedelta(minutes=150))
    schedule("late", at=utc(2026, 3, 6, 23))
    schedule("off", every=timedelta(minutes=1), enabled=False)
    header, *lines = plan("5h", "--since", "2026-03-07T00:00:00Z")
    assert header == "# 8 fires over 5 hours from 2026-03-07 00:00 UTC"
    names = [line.split("  ")[2] for line in lines]
    assert names == ["late", "hourly", "hourly", "every", "hourly", "hourly", "every", "hourly"]
    assert lines[0].startswith("2026-03-07 00:00 UTC")
    assert "overdue since 2026-03-06 23:00 UTC" in lines[0]
    assert lines[1].startswith("2026-03-07 01:00 UTC  2026-03-07 02:00 CET (Europe/Berlin)")
    assert lines[3].startswith("2026-03-07 02:30 UTC  2026-03-07 02:30 UTC (UTC)")
    assert not any("off" in line.split("  ")[2] for line in lines)


@pytest.mark.django_db
def test_runjobs_plan_runs_nothing() -> None:
    """--plan fires nothing: no run, no worker, and no schedule's arming or next_due changes."""
    schedule("daily", cron="0 7 * * *", timezone=TORONTO)
    schedule("every", every=timedelta(hours=1))
    schedule("late", at=utc(2026, 3, 6))
    schedule("fresh", every=timedelta(minutes=5))
    Scheduler().arm(utc(2026, 3, 7))
    Schedule.objects.filter(name="fresh").update(armed=False, next_due=None)
    fields = ("name", "armed", "next_due", "missed", "last_status", "last_started")
    before = list(Schedule.objects.order_by("name").values_list(*fields))
    assert Schedule.objects.filter(armed=True, next_due__lte=utc(2026, 3, 8)).count() == 3
    _, *lines = plan("7d", "--since", "2026-03-07T00:00:00Z")
    assert len(lines) > 100
    assert Run.objects.count() == 0
    assert WorkerProcess.objects.count() == 0
    assert list(Schedule.objects.order_by("name").values_list(*fields)) == before


@pytest.mark.django_db
def test_runjobs_plan_since_offset() -> None:
    """--since takes an ISO-8601 moment with an offset and starts the preview at that instant."""
    schedule("every", every=timedelta(hours=1))
    header, *lines = plan("2h", "--since", "2026-03-07T06:00:00-05:00")
    assert "2026-03-07 11:00 UTC" in header
    assert [line[:20] for line in lines] == ["2026-03-07 12:00 UTC", "2026-03-07 13:00 UTC"]


@pytest.mark.django_db
def test_runjobs_plan_since_naive() -> None:
    """A --since without an offset is read as UTC."""
    schedule("every", every=timedelta(hours=1))
    assert plan("2h", "--since", "2026-03-07T11:00") == plan("2h", "--since", "2026-03-07T11:00Z")


@pytest.mark.django_db
@override_settings(WEFT_CLOCK="tests.timing.test_preview.FixedClock")
def test_runjobs_plan_since_default_clock_now() -> None:
    """Without --since the preview starts at the clock's now (WEFT_CLOCK)."""
    schedule("every", every=timedelta(hours=1))
    header, *lines = plan("1h")
    assert "2026-03-07 11:00 UTC" in header
    assert lines == [line for line in lines if line.startswith("2026-03-07 12:00 UTC")]
    assert len(lines) == 1


@pytest.mark.django_db
def test_runjobs_plan_since_clock_flag() -> None:
    """Without --since the preview starts at the now of the clock given by --clock."""
    schedule("every", every=timedelta(hours=1))
    header, *_ = plan("1h", "--clock", "tests.timing.test_preview.FixedClock")
    assert "2026-03-07 11:00 UTC" in header


@pytest.mark.django_db
def test_runjobs_plan_no_schedules() -> None:
    """With no enabled schedule, --plan prints only its header with a count of zero."""
    schedule("off", every=timedelta(minutes=1), enabled=False)
    assert plan("1d", "--since", "2026-03-07T00:00Z") == [
        "# 0 fires over 1 day from 2026-03-07 00:00 UTC"
    ]


@pytest.mark.django_db
def test_runjobs_plan_header_counts_fires_and_skipped_slots_apart() -> None:
    """The header counts the fires, and apart from them the DST-skipped slots it lists."""
    schedule("nightly", cron="30 2 * * *", timezone=TORONTO)
    schedule("nightly (skip gap)", cron="30 2 * * *", timezone=TORONTO, on_gap="skip")
    header, *lines = plan("3d", "--since", "2026-03-07T00:00Z")
    # 3 fires of nightly (the 8th shifted), 2 of the skip row, and its skipped 02:30 on the 8th.
    assert len(lines) == 6
    assert sum("skipped" in line for line in lines) == 1
    assert header == ("# 5 fires over 3 days from 2026-03-07 00:00 UTC (1 DST-skipped slot listed)")


@pytest.mark.django_db
def test_runjobs_plan_header_one_fire_several_skipped_slots() -> None:
    """One fire is "1 fire"; several skipped slots are counted in the plural."""
    # 02:00 and 02:30 do not exist in Toronto on the 8th: both are listed, neither fires.
    schedule("gap", cron="0,30 2 * * *", timezone=TORONTO, on_gap="skip")
    schedule("every", every=timedelta(hours=20))
    header, *lines = plan("1d", "--since", "2026-03-08T00:00Z")
    assert [line[:20] for line in lines] == [
        "2026-03-08 07:00 UTC",
        "2026-03-08 07:30 UTC",
        "2026-03-08 20:00 UTC",
    ]
    assert header == ("# 1 fire over 1 day from 2026-03-08 00:00 UTC (2 DST-skipped slots listed)")


@pytest.mark.django_db
def test_runjobs_plan_unknown_stored_zone() -> None:
    """A stored row whose zone became unknown is printed in UTC with its raw zone, no crash."""
    cron = schedule("broken", cron="0 7 * * *", timezone=TORONTO)
    every = schedule("shown in mars", every=timedelta(hours=12), timezone=TORONTO)
    Schedule.objects.filter(pk__in=[cron.pk, every.pk]).update(timezone="Mars/Olympus")
    header, *lines = plan("1d", "--since", "2026-03-07T00:00Z")
    # The unplannable row is listed but does not fire.
    assert header == "# 2 fires over 1 day from 2026-03-07 00:00 UTC"
    assert lines == [
        "2026-03-07 00:00 UTC  2026-03-07 00:00 UTC (Mars/Olympus)  broken  "
        '[cannot be planned: unknown time zone "Mars/Olympus"; '
        'use an IANA name such as "Europe/Berlin"]',
        "2026-03-07 12:00 UTC  2026-03-07 12:00 UTC (Mars/Olympus)  shown in mars",
        "2026-03-08 00:00 UTC  2026-03-08 00:00 UTC (Mars/Olympus)  shown in mars",
    ]


@pytest.mark.django_db
def test_upcoming_lists_count_fires_and_skipped_slots_besides() -> None:
    """The next fires of one row: as many as asked, a DST-skipped slot listed uncounted."""
    row = schedule("nightly", cron="30 2 * * *", timezone=TORONTO, on_gap="skip")
    lines = upcoming(row, utc(2026, 3, 7), 3)
    assert [line.note for line in lines] == ["", "skipped", "", ""]
    assert [line.fires for line in lines].count(True) == 3
    assert lines[1].mark == "DST gap: 02:30 does not exist, skipped"
    assert lines[2].local == "2026-03-09 02:30 EDT"


@pytest.mark.django_db
def test_upcoming_of_intervals_and_one_offs() -> None:
    """An interval lists its grid far past any period; an overdue one-off shows at since."""
    every = schedule("yearly-ish", every=timedelta(days=300))
    assert dues(upcoming(every, utc(2026, 3, 7), 3)) == [
        utc(2026, 3, 7) + timedelta(days=300) * step for step in (1, 2, 3)
    ]
    late = schedule("late", at=utc(2026, 3, 6, 9, 15))
    (line,) = upcoming(late, utc(2026, 3, 7), 10)
    assert (line.due, line.mark) == (utc(2026, 3, 7), "overdue since 2026-03-06 09:15 UTC")
    huge = schedule("huge", every=timedelta(days=3_000_000))
    assert len(upcoming(huge, utc(2026, 3, 7), 10)) == 0, "past year 9999: nothing, no error"

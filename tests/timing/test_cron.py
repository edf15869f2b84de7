"""Tests for django_weft.timing.cron: cron expressions on a zone's wall clock with DST policies.

Expected instants are hard facts from the tz rules, not values read back from the code:
Toronto (EST -5 / EDT -4) springs forward 2026-03-08 02:00 -> 03:00 (07:00 UTC) and
falls back 2026-11-01 02:00 -> 01:00 (06:00 UTC); Berlin (CET +1 / CEST +2) springs
forward 2026-03-29 02:00 -> 03:00 and falls back 2026-10-25 03:00 -> 02:00 (both at
01:00 UTC); Lord Howe (+10:30 / +11) falls back 2026-04-05 02:00 -> 01:30 (04-04 15:00
UTC) and springs forward 2026-10-04 02:00 -> 02:30 (10-03 15:30 UTC).
"""

from __future__ import annotations

import calendar
import functools
import itertools
import pickle
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

import pytest

from django_weft.timing.cron import (
    FOLD_POLICIES,
    GAP_POLICIES,
    CronError,
    CronPlan,
    Fire,
    zone_from_name,
)
from tests.cron_oracle import offset_changes, reference_fires

TORONTO = "America/Toronto"
BERLIN = "Europe/Berlin"
LORD_HOWE = "Australia/Lord_Howe"


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0
) -> datetime:
    """An aware UTC datetime."""
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


def dues(plan: CronPlan, after: datetime, until: datetime, **kwargs: bool) -> list[datetime]:
    """The due instants of plan.fires()."""
    return [fire.due for fire in plan.fires(after, until, **kwargs)]


def notes(plan: CronPlan, after: datetime, until: datetime, **kwargs: bool) -> list[str]:
    """The notes of plan.fires()."""
    return [fire.note for fire in plan.fires(after, until, **kwargs)]


# --- zones -------------------------------------------------------------------------------


def test_zone_from_name_known_name() -> None:
    """A known IANA name gives that ZoneInfo."""
    assert zone_from_name(BERLIN) == ZoneInfo(BERLIN)
    assert zone_from_name("UTC").key == "UTC"


@pytest.mark.parametrize("name", ["Mars/Olympus", "", "europe/berlin", "Berlin", "../etc"])
def test_zone_from_name_unknown_name(name: str) -> None:
    """Unknown, empty or mis-cased names raise CronError(field="timezone") naming the value."""
    with pytest.raises(CronError) as caught:
        zone_from_name(name)
    assert caught.value.field == "timezone"
    assert f'"{name}"' in str(caught.value)
    assert "IANA" in str(caught.value)


# --- validation --------------------------------------------------------------------------


def test_cron_plan_valid_defaults() -> None:
    """A valid plan keeps its inputs and defaults to on_gap="shift", on_fold="first"."""
    plan = CronPlan("0 7 * * *", TORONTO)
    assert plan.expression == "0 7 * * *"
    assert plan.zone == ZoneInfo(TORONTO)
    assert (plan.on_gap, plan.on_fold) == ("shift", "first")
    assert GAP_POLICIES == ("shift", "skip")
    assert FOLD_POLICIES == ("first", "both")


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("", "no field is given; a cron has five: minute hour day-of-month month day-of-week"),
        (
            "* * * *",
            "4 fields are given; a cron has five: minute hour day-of-month month day-of-week",
        ),
        (
            "0 0 * * * *",
            "6 fields are given; a cron has five: minute hour day-of-month month day-of-week; "
            "seconds and years are not supported",
        ),
        (
            "0 0 1 1 * 2026",
            "6 fields are given; a cron has five: minute hour day-of-month month day-of-week; "
            "seconds and years are not supported",
        ),
        (
            "0 0 0 1 1 * 2026",
            "7 fields are given; a cron has five: minute hour day-of-month month day-of-week; "
            "seconds and years are not supported",
        ),
        (
            "@daily",
            'macros such as "@daily" are not supported; write the five fields, e.g. "0 0 * * *"',
        ),
        (
            "@hourly",
            'macros such as "@hourly" are not supported; write the five fields, e.g. "0 * * * *"',
        ),
        ("@reboot", 'macros such as "@reboot" are not supported; write the five fields'),
        ("61 * * * *", 'minute "61" is out of range 0-59'),
        ("0 24 * * *", 'hour "24" is out of range 0-23'),
        ("0 0 0 * *", 'day-of-month "0" is out of range 1-31'),
        ("* * * 13 *", 'month "13" is out of range 1-12'),
        ("* * * * 8", 'day-of-week "8" is out of range 0-7 (0 and 7 are Sunday)'),
        ("5,61 * * * *", 'minute "61" is out of range 0-59'),
        ("0 9-25 * * *", 'hour "25" in "9-25" is out of range 0-23'),
        ("a b c d e", 'minute "a" is not a number; use 0-59'),
        ("1.5 * * * *", 'minute "1.5" is not a number; use 0-59'),
        ("\u0663 * * * *", 'minute "\u0663" is not a number; use 0-59'),  # an Arabic-Indic 3
        ("0 x * * *", 'hour "x" is not a number; use 0-23'),
        ("0 0 * jam *", 'month "jam" is not a month; use 1-12 or jan-dec'),
        (
            "0 0 * * fry",
            'day-of-week "fry" is not a day of the week; use 0-7 (0 and 7 are Sunday) or sun-sat, '
            "a day and # (mon#2: the second Monday) or L and a day (L5: the last Friday)",
        ),
        (
            "0 0 W15 * *",
            'day-of-month "W15" is not a day of the month; use 1-31, L (the last day of the '
            "month) or a day and W (its nearest weekday), e.g. 15W",
        ),
        ("*/0 * * * *", 'minute step "0" in "*/0" is out of range 1-60'),
        ("*/90 * * * *", 'minute step "90" in "*/90" is out of range 1-60'),
        ("0 */x * * *", 'hour step "x" in "*/x" is not a whole number; use 1-24'),
        ("0 0 * * */8", 'day-of-week step "8" in "*/8" is out of range 1-7'),
        (
            "1,,2 * * * *",
            'minute "1,,2" has an empty list item; separate values with one comma, e.g. "1,15"',
        ),
        (
            "0 0 ,5 * *",
            'day-of-month ",5" has an empty list item; separate values with one comma, e.g. "1,15"',
        ),
        (
            "0 0 * 5, *",
            'month "5," has an empty list item; separate values with one comma, e.g. "1,15"',
        ),
        ("-5 * * * *", 'minute "-5": a range needs a value on each side of "-", e.g. "1-5"'),
        ("0 0 ?,5 * *", 'day-of-month "?,5": ? stands alone, for any day'),
        ("? * * * *", 'minute "?" is not a number; use 0-59'),
        (
            "0 0 L/2 * *",
            'day-of-month "L/2": L and W take no range or step; write L alone (the last day of '
            "the month) or a day and W, e.g. 15W",
        ),
        (
            "0 0 15-L * *",
            'day-of-month "15-L": L and W take no range or step; write L alone (the last day of '
            "the month) or a day and W, e.g. 15W",
        ),
        ("0 0 32W * *", 'day-of-month "32" in "32W" is out of range 1-31'),
        ("0 0 * * 1#6", 'day-of-week "1#6": week "6" is out of range 1-5'),
        ("0 0 * * 1#x", 'day-of-week "1#x": week "x" is not a number; use 1-5'),
        (
            "0 0 * * L",
            'day-of-week "L": # and L take one day, e.g. mon#2 (the second Monday) or L5 (the '
            "last Friday); list several items for several days",
        ),
        (
            "0 0 * * 1-5#2",
            'day-of-week "1-5#2": # and L take one day, e.g. mon#2 (the second Monday) or L5 '
            "(the last Friday); list several items for several days",
        ),
    ],
)
def test_cron_plan_invalid_expression(expression: str, problem: str) -> None:
    """A bad expression raises CronError(field="cron") naming the field, the value and the range."""
    with pytest.raises(CronError) as caught:
        CronPlan(expression, "UTC")
    assert caught.value.field == "cron"
    assert str(caught.value) == f'invalid cron "{expression}": {problem}'


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        (
            "5-1 * * * *",
            'minute range "5-1" is reversed: 5 comes after 1; write the lower value first, '
            'or list both ends to wrap around: "5-59,0-1"',
        ),
        (
            "0 22-2 * * *",
            'hour range "22-2" is reversed: 22 comes after 2; write the lower value first, '
            'or list both ends to wrap around: "22-23,0-2"',
        ),
        (
            "0 0 20-10 * *",
            'day-of-month range "20-10" is reversed: 20 comes after 10; write the lower value '
            'first, or list both ends to wrap around: "20-31,1-10"',
        ),
        (
            "0 0 * nov-feb *",
            'month range "nov-feb" is reversed: nov comes after feb; write the lower value '
            'first, or list both ends to wrap around: "11-12,1-2"',
        ),
        (
            "0 0 * * fri-mon",
            'day-of-week range "fri-mon" is reversed: fri comes after mon; write the lower value '
            'first, or list both ends to wrap around: "5-6,0-1"',
        ),
        (
            "0 0 * * sat-sun",
            'day-of-week range "sat-sun" is reversed: sat comes after sun; write the lower value '
            'first, or list both ends to wrap around: "6,0"',
        ),
        (
            "0 0 20-10/2 * *",
            'day-of-month range "20-10/2" is reversed: 20 comes after 10; write the lower value '
            "first",
        ),
        (
            "0,50-10 * * * *",
            'minute range "50-10" is reversed: 50 comes after 10; write the lower value first, '
            'or list both ends to wrap around: "50-59,0-10"',
        ),
    ],
)
def test_cron_plan_reversed_range_refused(expression: str, problem: str) -> None:
    """A range whose start comes after its end is refused, not wrapped around silently."""
    with pytest.raises(CronError) as caught:
        CronPlan(expression, "UTC")
    assert caught.value.field == "cron"
    assert str(caught.value) == f'invalid cron "{expression}": {problem}'


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # Equal ends are one value; 7-7 and 0 are both Sunday (2026-03-01 is a Sunday).
        (
            "5-5 12 * * *",
            [utc(2026, 2, 27, 12, 5), utc(2026, 2, 28, 12, 5), utc(2026, 3, 1, 12, 5)],
        ),
        ("0 12 * * 7-7", [utc(2026, 3, 1, 12)]),
        # start/step runs to the end of the field: 50/5 is 50,55.
        ("50/5 12 27 2 *", [utc(2026, 2, 27, 12, 50), utc(2026, 2, 27, 12, 55)]),
        # Sunday as 7 at the end of a range and of a stepped range (Fri 27, Sat 28, Sun 1).
        ("0 12 * * 6-7", [utc(2026, 2, 28, 12), utc(2026, 3, 1, 12)]),
        ("0 12 * * 5-7/2", [utc(2026, 2, 27, 12), utc(2026, 3, 1, 12)]),
    ],
)
def test_fires_range_edges(expression: str, expected: list[datetime]) -> None:
    """Equal range ends, start/step and Sunday as 7 inside ranges read as in cron."""
    plan = CronPlan(expression, "UTC")
    assert dues(plan, utc(2026, 2, 27), utc(2026, 3, 2)) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "R 9 * * *",
        "r 9 * * *",
        "0 R * * *",
        "R(0-29) 9 * * *",
        "0 9 * * R",
        "0 9 * * r(1-5)",
        "H 9 * * *",
        "h 9 * * *",
        "0 H * * *",
        "H(0-29) 9 * * *",
        "H/15 * * * *",
        "0,H 9 * * *",
        "0 9 h(1-28) * *",
    ],
)
def test_cron_plan_random_and_hashed_refused(expression: str) -> None:
    """R (drawn again at every evaluation) and H, from croniter and Jenkins, are refused."""
    with pytest.raises(CronError) as caught:
        CronPlan(expression, "UTC")
    assert caught.value.field == "cron"
    assert f'"{expression}"' in str(caught.value)
    assert "random" in str(caught.value)
    assert "hashed" in str(caught.value)
    assert "not supported" in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        # 2026-03-01 is a Sunday: the first Thursday after it is the 5th.
        ("0 9 * * thu", utc(2026, 3, 1), utc(2026, 3, 5, 9)),
        ("0 9 * * THU", utc(2026, 3, 5, 9), utc(2026, 3, 12, 9)),
        ("0 9 * * mon,thu", utc(2026, 3, 1), utc(2026, 3, 2, 9)),
        ("0 9 * mar *", utc(2026, 1, 1), utc(2026, 3, 1, 9)),
        ("0 9 * Mar *", utc(2026, 3, 31, 9), utc(2027, 3, 1, 9)),
    ],
)
def test_cron_plan_names_not_taken_for_random_or_hashed(
    expression: str, after: datetime, expected: datetime
) -> None:
    """Weekday and month names are still accepted by the R/H check (case-insensitive)."""
    assert CronPlan(expression, "UTC").next_fire(after).due == expected


@pytest.mark.parametrize("expression", ["0 0 30 2 *", "0 0 31 4 *", "15 10 31 6,9,11 *"])
def test_cron_plan_never_occurring_expression(expression: str) -> None:
    """An expression that parses but matches no date is refused as never occurring."""
    with pytest.raises(CronError) as caught:
        CronPlan(expression, "UTC")
    assert caught.value.field == "cron"
    assert str(caught.value) == f'cron "{expression}" never occurs'


def test_cron_plan_unknown_zone() -> None:
    """An unknown zone raises CronError(field="timezone") naming it."""
    with pytest.raises(CronError) as caught:
        CronPlan("0 7 * * *", "Mars/Olympus")
    assert caught.value.field == "timezone"
    assert '"Mars/Olympus"' in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "field", "value"),
    [
        ({"on_gap": "ignore"}, "on_gap", "ignore"),
        ({"on_gap": "first"}, "on_gap", "first"),
        ({"on_fold": "shift"}, "on_fold", "shift"),
        ({"on_fold": "last"}, "on_fold", "last"),
    ],
)
def test_cron_plan_unknown_policy(kwargs: dict[str, str], field: str, value: str) -> None:
    """A policy outside GAP_POLICIES / FOLD_POLICIES raises CronError naming field and value."""
    with pytest.raises(CronError) as caught:
        CronPlan("0 7 * * *", TORONTO, **kwargs)
    assert caught.value.field == field
    assert f'"{value}"' in str(caught.value)


def test_cron_error_is_value_error_and_pickles() -> None:
    """CronError is a ValueError and keeps its message and field through pickling."""
    error = CronError('cron "x" never occurs', field="cron")
    assert isinstance(error, ValueError)
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.field) == ('cron "x" never occurs', "cron")


# --- cron fields -------------------------------------------------------------------------


def test_fires_ranges_lists_and_steps() -> None:
    """Ranges with steps and lists expand as in cron."""
    plan = CronPlan("1-10/2 8,20 * * *", "UTC")
    assert dues(plan, utc(2026, 5, 1), utc(2026, 5, 1, 23, 59)) == [
        utc(2026, 5, 1, hour, minute) for hour in (8, 20) for minute in (1, 3, 5, 7, 9)
    ]


def test_fires_every_fifteen_minutes() -> None:
    """*/15 fires on the quarter hours."""
    plan = CronPlan("*/15 * * * *", "UTC")
    assert dues(plan, utc(2026, 5, 1, 9, 50), utc(2026, 5, 1, 10, 50)) == [
        utc(2026, 5, 1, 10, 0),
        utc(2026, 5, 1, 10, 15),
        utc(2026, 5, 1, 10, 30),
        utc(2026, 5, 1, 10, 45),
    ]


def test_next_fire_month_and_weekday_names() -> None:
    """Month and weekday names work, here in Berlin across DST and into the next year."""
    plan = CronPlan("0 9 * jan-mar mon-fri", BERLIN)
    # Fri 2026-03-27 has run; Mon 2026-03-30 09:00 CEST; then Fri 2027-01-01 09:00 CET.
    assert plan.next_fire(utc(2026, 3, 27, 12)).due == utc(2026, 3, 30, 7)
    assert plan.next_fire(utc(2026, 3, 30, 7)).due == utc(2026, 3, 31, 7)
    assert plan.next_fire(utc(2026, 3, 31, 7)).due == utc(2027, 1, 1, 8)


def test_fires_sunday_as_zero_seven_and_name() -> None:
    """Sunday written as 0, as 7 and as sun gives the same fires (Sundays of March 2026)."""
    expected = [utc(2026, 3, day, 10) for day in (1, 8, 15, 22, 29)]
    for weekday in ("0", "7", "sun"):
        plan = CronPlan(f"0 10 * * {weekday}", "UTC")
        assert dues(plan, utc(2026, 3, 1), utc(2026, 3, 31)) == expected


def test_fires_both_day_fields_restricted_match_either() -> None:
    """With day-of-month and day-of-week both restricted, a day matching either runs."""
    plan = CronPlan("0 12 10 * sun", "UTC")
    assert dues(plan, utc(2026, 3, 1), utc(2026, 3, 31)) == [
        utc(2026, 3, day, 12) for day in (1, 8, 10, 15, 22, 29)
    ]


# March 2026 starts on a Sunday: Sundays 1 8 15 22 29, Mondays 2 9 16 23 30, Tuesdays
# 3 10 17 24 31, Wednesdays 4 11 18 25, Thursdays 5 12 19 26, Fridays 6 13 20 27,
# Saturdays 7 14 21 28. June 2026 starts on a Monday: Mondays 1 8 15 22 29.
ALL_MARCH = list(range(1, 32))


@pytest.mark.parametrize(
    ("expression", "month", "days"),
    [
        pytest.param("0 12 * * *", 3, ALL_MARCH, id="both-star"),
        pytest.param("0 12 10 * *", 3, [10], id="month-day-only"),
        pytest.param("0 12 * * mon", 3, [2, 9, 16, 23, 30], id="weekday-only"),
        pytest.param("0 12 10 * mon", 3, [2, 9, 10, 16, 23, 30], id="both-restricted-or"),
        # A day field starting with * is "unrestricted" for the rule: AND.
        pytest.param("0 12 */7 * mon", 3, [], id="star-step-and-none"),
        pytest.param("0 12 */7 * mon", 6, [1, 8, 15, 22, 29], id="star-step-and-mondays"),
        pytest.param("0 12 */7 * sun", 3, [1, 8, 15, 22, 29], id="star-step-and-sundays"),
        pytest.param(
            "0 12 1-31/7 * mon", 3, [1, 2, 8, 9, 15, 16, 22, 23, 29, 30], id="range-step-or"
        ),
        pytest.param("0 12 10,11 * */2", 3, [10], id="weekday-star-step-and"),
        # Only the first character counts, as in Debian's entry.c.
        pytest.param("0 12 *,10 * 2", 3, [3, 10, 17, 24, 31], id="star-first-and"),
        pytest.param("0 12 10,* * 2", 3, ALL_MARCH, id="star-later-or"),
        pytest.param("0 12 ? * mon", 3, [2, 9, 16, 23, 30], id="question-mark-month-day"),
        pytest.param("0 12 10 * ?", 3, [10], id="question-mark-weekday"),
        # A full field written out is restricted: OR with it matches every day.
        pytest.param("0 12 1-31 * mon", 3, ALL_MARCH, id="full-month-days-or"),
        pytest.param("0 12 15 * 0-7", 3, ALL_MARCH, id="full-weekdays-or"),
        # The extras are day values like any other under the rule.
        pytest.param("0 12 L * fri", 3, [6, 13, 20, 27, 31], id="last-day-or-fridays"),
        pytest.param("0 12 15W * wed", 3, [4, 11, 16, 18, 25], id="nearest-weekday-or"),
        pytest.param("0 12 1 * mon#2", 3, [1, 9], id="nth-weekday-or"),
        pytest.param("0 12 */2 * L5", 3, [27], id="star-step-and-last-friday"),
        pytest.param("0 12 * * L5", 3, [27], id="last-friday"),
        pytest.param("0 12 * * Lfri", 3, [27], id="last-friday-by-name"),
        pytest.param("0 12 * * 0#5,sat#1", 3, [7, 29], id="nth-weekdays"),
        pytest.param("0 12 L * *", 3, [31], id="last-day"),
        # The 14th is a Saturday (Friday 13th), the 1st a Sunday (Monday 2nd), the 28th a
        # Saturday (Friday 27th); 31W in a 30-day month matches nothing.
        pytest.param("0 12 14W,1W,28W * *", 3, [2, 13, 27], id="nearest-weekdays"),
        pytest.param("0 12 31W * *", 6, [], id="nearest-weekday-missing-day"),
    ],
)
def test_fires_day_fields_vixie_rule(expression: str, month: int, days: list[int]) -> None:
    """Both day fields restricted: either matches; one starting with * (or ?): both must."""
    plan = CronPlan(expression, "UTC")
    last = calendar.monthrange(2026, month)[1]
    assert dues(plan, utc(2026, month, 1), utc(2026, month, last, 23)) == [
        utc(2026, month, day, 12) for day in days
    ]


def test_next_fire_feb_29_only_in_leap_years() -> None:
    """Feb 29 fires only in leap years: after 2026-03-01 the next is 2028-02-29 12:00 EST."""
    plan = CronPlan("0 12 29 2 *", TORONTO)
    assert plan.next_fire(utc(2026, 3, 1)) == Fire(
        due=utc(2028, 2, 29, 17), wall=datetime(2028, 2, 29, 12), note=""
    )


def test_next_fire_feb_29_across_century() -> None:
    """2100 is no leap year, so after 2096 the next Feb 29 is in 2104 (an eight-year search)."""
    plan = CronPlan("0 12 29 2 *", "UTC")
    assert plan.next_fire(utc(2096, 3, 1)).due == utc(2104, 2, 29, 12)


# --- wall clock and arguments ------------------------------------------------------------


def test_fires_follow_wall_clock_across_dst() -> None:
    """0 7 in Toronto fires at 12:00 UTC before DST starts and at 11:00 UTC after."""
    plan = CronPlan("0 7 * * *", TORONTO)
    fires = list(plan.fires(utc(2026, 3, 6, 12), utc(2026, 3, 9, 11)))
    assert [fire.due for fire in fires] == [
        utc(2026, 3, 7, 12),
        utc(2026, 3, 8, 11),
        utc(2026, 3, 9, 11),
    ]
    assert [fire.wall for fire in fires] == [datetime(2026, 3, day, 7) for day in (7, 8, 9)]
    assert all(fire.due.tzinfo is UTC and fire.note == "" for fire in fires)


def test_next_fire_after_in_other_time_zone() -> None:
    """`after` may carry any time zone; it is compared as an instant."""
    plan = CronPlan("0 7 * * *", TORONTO)
    # 06:59 EST = 11:59 UTC, and 21:00 JST on 03-07 = 12:00 UTC, exactly the 07:00 fire.
    assert plan.next_fire(datetime(2026, 3, 7, 6, 59, tzinfo=ZoneInfo(TORONTO))).due == utc(
        2026, 3, 7, 12
    )
    assert plan.next_fire(datetime(2026, 3, 7, 21, tzinfo=ZoneInfo("Asia/Tokyo"))).due == utc(
        2026, 3, 8, 11
    )


def test_next_fire_after_equal_to_fire_is_strict() -> None:
    """A fire exactly at `after` is not returned; the following one is."""
    plan = CronPlan("0 7 * * *", TORONTO)
    assert plan.next_fire(utc(2026, 3, 7, 12)).due == utc(2026, 3, 8, 11)
    assert plan.next_fire(utc(2026, 3, 7, 11, 59, 59, 999999)).due == utc(2026, 3, 7, 12)


def test_fires_bounds_exclusive_after_inclusive_until() -> None:
    """fires() excludes a fire at `after` and includes one at `until`."""
    plan = CronPlan("0 * * * *", "UTC")
    assert dues(plan, utc(2026, 5, 1, 10), utc(2026, 5, 1, 12)) == [
        utc(2026, 5, 1, 11),
        utc(2026, 5, 1, 12),
    ]
    assert dues(plan, utc(2026, 5, 1, 12), utc(2026, 5, 1, 10)) == []


def test_next_fire_across_year_boundary() -> None:
    """New Year's midnight in Berlin is 23:00 UTC the day before; the next is a year later."""
    plan = CronPlan("0 0 1 1 *", BERLIN)
    assert plan.next_fire(utc(2026, 6, 1)).due == utc(2026, 12, 31, 23)
    assert plan.next_fire(utc(2026, 12, 31, 23)).due == utc(2027, 12, 31, 23)


def test_next_fire_end_of_datetime_range() -> None:
    """The last representable fire is still returned; past it next_fire raises CronError."""
    plan = CronPlan("0 23 31 12 *", "UTC")
    assert plan.next_fire(utc(9999, 12, 30)).due == utc(9999, 12, 31, 23)
    with pytest.raises(CronError) as caught:
        plan.next_fire(utc(9999, 12, 31, 23))
    assert caught.value.field == "cron"


def test_next_fire_ends_of_datetime_range_in_offset_zones() -> None:
    """A wall time whose instant falls outside datetime's range is no fire, at either end."""
    new_year = CronPlan("0 23 31 12 *", TORONTO)
    # 9999-12-31 23:00 EST would be 10000-01-01 04:00 UTC.
    assert new_year.next_fire(utc(9998, 12, 31, 12)).due == utc(9999, 1, 1, 4)
    with pytest.raises(CronError):
        new_year.next_fire(utc(9999, 1, 1, 4))
    # 0001-01-01 00:00 in Tokyo (+09:18:59 then) was before year 1 in UTC.
    start = datetime.min.replace(tzinfo=UTC)
    assert CronPlan("0 0 1 1 *", "Asia/Tokyo").next_fire(start).due == datetime(
        1, 12, 31, 14, 41, 1, tzinfo=UTC
    )
    assert CronPlan("0 0 1 1 *", TORONTO).next_fire(start).due.year == 1


def test_next_fire_naive_after_refused() -> None:
    """A naive `after` or `until` raises ValueError instead of guessing a zone."""
    plan = CronPlan("0 7 * * *", TORONTO)
    with pytest.raises(ValueError, match="timezone-aware"):
        plan.next_fire(datetime(2026, 3, 7))
    with pytest.raises(ValueError, match="timezone-aware"):
        list(plan.fires(utc(2026, 3, 7), datetime(2026, 3, 8)))


@pytest.fixture
def process_tz_toronto() -> Iterator[None]:
    """Run with the process's local time zone set to Toronto, then restore it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", TORONTO)
        time.tzset()
        yield
    time.tzset()


@pytest.mark.usefixtures("process_tz_toronto")
def test_fires_independent_of_process_time_zone() -> None:
    """The process's local time zone does not leak into wall-clock iteration."""
    plan = CronPlan("30 2 * * *", BERLIN)
    assert dues(plan, utc(2026, 3, 7), utc(2026, 3, 10)) == [
        utc(2026, 3, day, 1, 30) for day in (7, 8, 9)
    ]


# --- gaps (spring forward) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "expression", "after", "until", "before_gap", "shifted", "after_gap"),
    [
        # Toronto 02:30: EST 07:30 UTC the day before, shifted to 03:00 EDT, then EDT 06:30.
        (
            TORONTO,
            "30 2 * * *",
            utc(2026, 3, 7),
            utc(2026, 3, 10),
            utc(2026, 3, 7, 7, 30),
            utc(2026, 3, 8, 7),
            utc(2026, 3, 9, 6, 30),
        ),
        # Berlin 02:30: CET 01:30 UTC, shifted to 03:00 CEST = 01:00 UTC, then CEST 00:30.
        (
            BERLIN,
            "30 2 * * *",
            utc(2026, 3, 28),
            utc(2026, 3, 31),
            utc(2026, 3, 28, 1, 30),
            utc(2026, 3, 29, 1),
            utc(2026, 3, 30, 0, 30),
        ),
        # Lord Howe 02:15: +10:30 15:45 UTC, shifted to 02:30 +11 = 15:30 UTC, then 15:15.
        (
            LORD_HOWE,
            "15 2 * * *",
            utc(2026, 10, 2),
            utc(2026, 10, 5),
            utc(2026, 10, 2, 15, 45),
            utc(2026, 10, 3, 15, 30),
            utc(2026, 10, 4, 15, 15),
        ),
    ],
    ids=["toronto", "berlin", "lord_howe"],
)
class TestGap:
    """A wall time inside a spring-forward gap, under both on_gap policies."""

    def test_fires_gap_shift(
        self,
        zone: str,
        expression: str,
        after: datetime,
        until: datetime,
        before_gap: datetime,
        shifted: datetime,
        after_gap: datetime,
    ) -> None:
        """on_gap="shift" fires at the transition instant, noted "shifted"."""
        fires = list(CronPlan(expression, zone, on_gap="shift").fires(after, until))
        assert [fire.due for fire in fires] == [before_gap, shifted, after_gap]
        assert [fire.note for fire in fires] == ["", "shifted", ""]
        assert fires[1].wall.hour == 2

    def test_fires_gap_skip(
        self,
        zone: str,
        expression: str,
        after: datetime,
        until: datetime,
        before_gap: datetime,
        shifted: datetime,
        after_gap: datetime,
    ) -> None:
        """on_gap="skip" has no fire on the gap day."""
        plan = CronPlan(expression, zone, on_gap="skip")
        assert dues(plan, after, until) == [before_gap, after_gap]
        assert plan.next_fire(before_gap).due == after_gap

    def test_next_fire_gap_shift_after_inside_gap(
        self,
        zone: str,
        expression: str,
        after: datetime,
        until: datetime,
        before_gap: datetime,
        shifted: datetime,
        after_gap: datetime,
    ) -> None:
        """next_fire is exact just before and exactly at the shifted instant."""
        plan = CronPlan(expression, zone)
        assert plan.next_fire(shifted - timedelta(seconds=1)).due == shifted
        assert plan.next_fire(shifted).due == after_gap


def test_fires_gap_skip_include_skipped_reports_slot() -> None:
    """include_skipped reports the dropped slot at its would-be (fold=0) instant."""
    plan = CronPlan("30 2 * * *", TORONTO, on_gap="skip")
    fires = list(plan.fires(utc(2026, 3, 7), utc(2026, 3, 10), include_skipped=True))
    # 02:30 read as EST (fold=0) is 07:30 UTC.
    assert fires[1] == Fire(
        due=utc(2026, 3, 8, 7, 30), wall=datetime(2026, 3, 8, 2, 30), note="skipped"
    )
    assert [fire.note for fire in fires] == ["", "skipped", ""]
    assert plan.next_fire(utc(2026, 3, 8, 7)).due == utc(2026, 3, 9, 6, 30)


def test_fires_gap_shift_several_walls_fire_once() -> None:
    """Gap walls shifting onto the same instant fire once, for the first wall."""
    plan = CronPlan("0,30 2 * * *", TORONTO)
    fires = list(plan.fires(utc(2026, 3, 8), utc(2026, 3, 8, 12)))
    assert fires == [Fire(due=utc(2026, 3, 8, 7), wall=datetime(2026, 3, 8, 2, 0), note="shifted")]


def test_fires_hourly_through_gap_fire_once_per_instant() -> None:
    """Hourly: the missing 02:00 is skipped; 03:00 EDT fires once, as an ordinary fire."""
    plan = CronPlan("0 * * * *", TORONTO)
    fires = list(plan.fires(utc(2026, 3, 8, 5, 30), utc(2026, 3, 8, 8, 30)))
    assert [fire.due for fire in fires] == [
        utc(2026, 3, 8, 6),
        utc(2026, 3, 8, 7),
        utc(2026, 3, 8, 8),
    ]
    assert [fire.wall.hour for fire in fires] == [1, 3, 4]
    assert [fire.note for fire in fires] == ["", "", ""]


def test_fires_quarter_hourly_through_gap_keeps_rhythm() -> None:
    """*/15 through the Toronto gap fires every 15 real minutes, never twice at once."""
    plan = CronPlan("*/15 * * * *", TORONTO)
    start = utc(2026, 3, 8, 6, 30)
    assert dues(plan, start, utc(2026, 3, 8, 7, 30)) == [
        start + timedelta(minutes=15 * step) for step in range(1, 5)
    ]


@pytest.mark.parametrize("on_gap", GAP_POLICIES)
@pytest.mark.parametrize(
    ("zone", "expression", "after", "until", "expected", "walls"),
    [
        # Toronto 2026-03-08: 00:30 and 01:30 EST (-5), 02:30 does not exist, 03:30 and
        # 04:30 EDT (-4): one fire per real hour, none at 07:00 UTC.
        pytest.param(
            TORONTO,
            "30 * * * *",
            utc(2026, 3, 8, 5),
            utc(2026, 3, 8, 9),
            [utc(2026, 3, 8, hour, 30) for hour in (5, 6, 7, 8)],
            [datetime(2026, 3, 8, hour, 30) for hour in (0, 1, 3, 4)],
            id="toronto-30",
        ),
        # 01:15-01:45 EST are 06:15-06:45 UTC; 03:00-03:45 EDT are 07:00-07:45 UTC.
        pytest.param(
            TORONTO,
            "*/15 * * * *",
            utc(2026, 3, 8, 6),
            utc(2026, 3, 8, 7, 45),
            [utc(2026, 3, 8, 6, m) for m in (15, 30, 45)]
            + [utc(2026, 3, 8, 7, m) for m in (0, 15, 30, 45)],
            [datetime(2026, 3, 8, 1, m) for m in (15, 30, 45)]
            + [datetime(2026, 3, 8, 3, m) for m in (0, 15, 30, 45)],
            id="toronto-15",
        ),
        # Berlin 2026-03-29: 00:30 and 01:30 CET (+1) are 23:30 and 00:30 UTC; 02:30 does
        # not exist; 03:30 and 04:30 CEST (+2) are 01:30 and 02:30 UTC.
        pytest.param(
            BERLIN,
            "30 * * * *",
            utc(2026, 3, 28, 23),
            utc(2026, 3, 29, 3),
            [utc(2026, 3, 28, 23, 30)] + [utc(2026, 3, 29, hour, 30) for hour in (0, 1, 2)],
            [datetime(2026, 3, 29, hour, 30) for hour in (0, 1, 3, 4)],
            id="berlin-30",
        ),
        # 01:15-01:45 CET are 00:15-00:45 UTC; 03:00-03:45 CEST are 01:00-01:45 UTC.
        pytest.param(
            BERLIN,
            "*/15 * * * *",
            utc(2026, 3, 29, 0),
            utc(2026, 3, 29, 1, 45),
            [utc(2026, 3, 29, 0, m) for m in (15, 30, 45)]
            + [utc(2026, 3, 29, 1, m) for m in (0, 15, 30, 45)],
            [datetime(2026, 3, 29, 1, m) for m in (15, 30, 45)]
            + [datetime(2026, 3, 29, 3, m) for m in (0, 15, 30, 45)],
            id="berlin-15",
        ),
        # Lord Howe 2026-10-04: 00:30 and 01:30 +10:30 are 14:00 and 15:00 UTC on the 3rd;
        # 02:00-02:29 do not exist, so 02:30 +11 (15:30 UTC) is a real wall time, then
        # 03:30 +11 (16:30 UTC).
        pytest.param(
            LORD_HOWE,
            "30 * * * *",
            utc(2026, 10, 3, 13, 45),
            utc(2026, 10, 3, 16, 45),
            [
                utc(2026, 10, 3, 14),
                utc(2026, 10, 3, 15),
                utc(2026, 10, 3, 15, 30),
                utc(2026, 10, 3, 16, 30),
            ],
            [datetime(2026, 10, 4, hour, 30) for hour in (0, 1, 2, 3)],
            id="lord_howe-30",
        ),
        # 01:30 and 01:45 +10:30 are 15:00 and 15:15 UTC; 02:00 and 02:15 do not exist;
        # 02:30, 02:45 and 03:00 +11 are 15:30, 15:45 and 16:00 UTC.
        pytest.param(
            LORD_HOWE,
            "*/15 * * * *",
            utc(2026, 10, 3, 14, 50),
            utc(2026, 10, 3, 16),
            [utc(2026, 10, 3, 15, m) for m in (0, 15, 30, 45)] + [utc(2026, 10, 3, 16)],
            [datetime(2026, 10, 4, 1, m) for m in (30, 45)]
            + [datetime(2026, 10, 4, 2, m) for m in (30, 45)]
            + [datetime(2026, 10, 4, 3, 0)],
            id="lord_howe-15",
        ),
    ],
)
def test_fires_real_time_hours_through_gap_skip_missing_walls(
    zone: str,
    expression: str,
    after: datetime,
    until: datetime,
    expected: list[datetime],
    walls: list[datetime],
    on_gap: str,
) -> None:
    """An hour field * skips the wall times of a gap whatever on_gap says: no shifted fire."""
    plan = CronPlan(expression, zone, on_gap=on_gap)
    fires = list(plan.fires(after, until))
    assert [fire.due for fire in fires] == expected
    assert [fire.wall for fire in fires] == walls
    assert all(fire.note == "" for fire in fires)
    for due, following in itertools.pairwise([after, *expected]):
        assert plan.next_fire(due).due == following
    # Every skipped wall's would-be instant is a real fire here, so none is reported.
    assert list(plan.fires(after, until, include_skipped=True)) == fires


@pytest.mark.parametrize("on_gap", GAP_POLICIES)
@pytest.mark.parametrize(
    ("zone", "expression", "after", "until", "before_gap", "skipped", "after_gap"),
    [
        # Lord Howe: 01:00 +10:30 is 14:30 UTC; 02:00 does not exist (read as +10:30 it
        # would be 15:30 UTC); 03:00 +11 is 16:00 UTC.
        pytest.param(
            LORD_HOWE,
            "0 * * * *",
            utc(2026, 10, 3, 14),
            utc(2026, 10, 3, 16),
            Fire(utc(2026, 10, 3, 14, 30), datetime(2026, 10, 4, 1)),
            Fire(utc(2026, 10, 3, 15, 30), datetime(2026, 10, 4, 2), "skipped"),
            Fire(utc(2026, 10, 3, 16), datetime(2026, 10, 4, 3)),
            id="lord_howe-hourly",
        ),
        # Toronto, every two hours: 00:00 EST is 05:00 UTC; 02:00 does not exist (read
        # as EST it would be 07:00 UTC, when 03:00 EDT does not match); 04:00 EDT is 08:00.
        pytest.param(
            TORONTO,
            "0 */2 * * *",
            utc(2026, 3, 8, 4),
            utc(2026, 3, 8, 8),
            Fire(utc(2026, 3, 8, 5), datetime(2026, 3, 8, 0)),
            Fire(utc(2026, 3, 8, 7), datetime(2026, 3, 8, 2), "skipped"),
            Fire(utc(2026, 3, 8, 8), datetime(2026, 3, 8, 4)),
            id="toronto-star-step",
        ),
        # A step that does not start with * is a step too.
        pytest.param(
            TORONTO,
            "0 0-23/2 * * *",
            utc(2026, 3, 8, 4),
            utc(2026, 3, 8, 8),
            Fire(utc(2026, 3, 8, 5), datetime(2026, 3, 8, 0)),
            Fire(utc(2026, 3, 8, 7), datetime(2026, 3, 8, 2), "skipped"),
            Fire(utc(2026, 3, 8, 8), datetime(2026, 3, 8, 4)),
            id="toronto-range-step",
        ),
        # Berlin, every two hours: 00:00 CET is 23:00 UTC the day before; 02:00 does not
        # exist (read as CET it would be 01:00 UTC, when 03:00 CEST does not match);
        # 04:00 CEST is 02:00 UTC.
        pytest.param(
            BERLIN,
            "0 */2 * * *",
            utc(2026, 3, 28, 22),
            utc(2026, 3, 29, 2),
            Fire(utc(2026, 3, 28, 23), datetime(2026, 3, 29, 0)),
            Fire(utc(2026, 3, 29, 1), datetime(2026, 3, 29, 2), "skipped"),
            Fire(utc(2026, 3, 29, 2), datetime(2026, 3, 29, 4)),
            id="berlin-star-step",
        ),
    ],
)
def test_fires_real_time_hours_gap_wall_skipped_and_reported(
    zone: str,
    expression: str,
    after: datetime,
    until: datetime,
    before_gap: Fire,
    skipped: Fire,
    after_gap: Fire,
    on_gap: str,
) -> None:
    """A gap wall of an hour field * or step is skipped; reported if no fire has its instant."""
    plan = CronPlan(expression, zone, on_gap=on_gap)
    fires = list(plan.fires(after, until))
    assert fires == [before_gap, after_gap]
    assert plan.next_fire(before_gap.due) == after_gap
    reported = list(plan.fires(after, until, include_skipped=True))
    assert [fire for fire in reported if fire.note == "skipped"] == [skipped]
    assert [fire for fire in reported if fire.note != "skipped"] == fires


def test_fires_hour_list_gap_follows_on_gap() -> None:
    """A written-out hour list (no * or step) still follows on_gap in a gap."""
    after, until = utc(2026, 3, 8, 6), utc(2026, 3, 8, 8)
    shift = CronPlan("30 0-23 * * *", TORONTO)
    assert notes(shift, after, until) == ["", "shifted", ""]
    assert dues(shift, after, until) == [
        utc(2026, 3, 8, 6, 30),
        utc(2026, 3, 8, 7),
        utc(2026, 3, 8, 7, 30),
    ]
    skip = CronPlan("30 0-23 * * *", TORONTO, on_gap="skip")
    assert dues(skip, after, until) == [utc(2026, 3, 8, 6, 30), utc(2026, 3, 8, 7, 30)]


def test_fires_quarter_hourly_gap_skip_include_skipped() -> None:
    """Skipped slots whose would-be instant another wall fires at are not reported twice."""
    plan = CronPlan("*/15 * * * *", TORONTO, on_gap="skip")
    start = utc(2026, 3, 8, 6, 30)
    fires = list(plan.fires(start, utc(2026, 3, 8, 8), include_skipped=True))
    assert [fire.due for fire in fires] == [start + timedelta(minutes=15 * s) for s in range(1, 7)]
    assert all(fire.note == "" for fire in fires)


# --- folds (fall back) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "expression", "after", "until", "before_fold", "first", "second", "after_fold"),
    [
        # Toronto 01:30: EDT 05:30 UTC, on the fold day EDT 05:30 and EST 06:30, then EST 06:30.
        (
            TORONTO,
            "30 1 * * *",
            utc(2026, 10, 31),
            utc(2026, 11, 3),
            utc(2026, 10, 31, 5, 30),
            utc(2026, 11, 1, 5, 30),
            utc(2026, 11, 1, 6, 30),
            utc(2026, 11, 2, 6, 30),
        ),
        # Berlin 02:30: CEST 00:30 UTC, on the fold day 00:30 and CET 01:30, then CET 01:30.
        (
            BERLIN,
            "30 2 * * *",
            utc(2026, 10, 24),
            utc(2026, 10, 27),
            utc(2026, 10, 24, 0, 30),
            utc(2026, 10, 25, 0, 30),
            utc(2026, 10, 25, 1, 30),
            utc(2026, 10, 26, 1, 30),
        ),
        # Lord Howe 01:45: +11 14:45 UTC, on the fold day +11 14:45 and +10:30 15:15.
        (
            LORD_HOWE,
            "45 1 * * *",
            utc(2026, 4, 3),
            utc(2026, 4, 6),
            utc(2026, 4, 3, 14, 45),
            utc(2026, 4, 4, 14, 45),
            utc(2026, 4, 4, 15, 15),
            utc(2026, 4, 5, 15, 15),
        ),
    ],
    ids=["toronto", "berlin", "lord_howe"],
)
class TestFold:
    """A wall time inside a fall-back fold, under both on_fold policies."""

    def test_fires_fold_first(
        self,
        zone: str,
        expression: str,
        after: datetime,
        until: datetime,
        before_fold: datetime,
        first: datetime,
        second: datetime,
        after_fold: datetime,
    ) -> None:
        """on_fold="first" fires once, at the first occurrence."""
        plan = CronPlan(expression, zone, on_fold="first")
        assert dues(plan, after, until) == [before_fold, first, after_fold]
        assert plan.next_fire(first).due == after_fold

    def test_fires_fold_both(
        self,
        zone: str,
        expression: str,
        after: datetime,
        until: datetime,
        before_fold: datetime,
        first: datetime,
        second: datetime,
        after_fold: datetime,
    ) -> None:
        """on_fold="both" fires at both occurrences, the second noted "repeated"."""
        plan = CronPlan(expression, zone, on_fold="both")
        fires = list(plan.fires(after, until))
        assert [fire.due for fire in fires] == [before_fold, first, second, after_fold]
        assert [fire.note for fire in fires] == ["", "", "repeated", ""]
        assert fires[1].wall == fires[2].wall

    def test_next_fire_fold_both_after_inside_fold(
        self,
        zone: str,
        expression: str,
        after: datetime,
        until: datetime,
        before_fold: datetime,
        first: datetime,
        second: datetime,
        after_fold: datetime,
    ) -> None:
        """With `after` between the two occurrences, next_fire is the repeated one."""
        plan = CronPlan(expression, zone, on_fold="both")
        assert plan.next_fire(first) == Fire(
            due=second, wall=second.astimezone(ZoneInfo(zone)).replace(tzinfo=None), note="repeated"
        )
        assert plan.next_fire(second).due == after_fold


@pytest.mark.parametrize("on_fold", FOLD_POLICIES)
def test_fires_hourly_through_fold_every_real_hour(on_fold: str) -> None:
    """An hourly cron fires every real hour through the Toronto fold, whatever on_fold says."""
    plan = CronPlan("0 * * * *", TORONTO, on_fold=on_fold)
    fires = list(plan.fires(utc(2026, 11, 1, 3, 30), utc(2026, 11, 1, 7, 30)))
    assert [fire.due for fire in fires] == [utc(2026, 11, 1, hour) for hour in (4, 5, 6, 7)]
    assert [fire.wall.hour for fire in fires] == [0, 1, 1, 2]
    assert [fire.note for fire in fires] == ["", "", "repeated", ""]


def test_fires_hourly_step_through_fold_berlin() -> None:
    """An hour field */1 also keeps real-time rhythm through the Berlin fold."""
    plan = CronPlan("0 */1 * * *", BERLIN)
    assert notes(plan, utc(2026, 10, 24, 22, 30), utc(2026, 10, 25, 2, 30)) == [
        "",
        "",
        "repeated",
        "",
    ]
    assert dues(plan, utc(2026, 10, 24, 22, 30), utc(2026, 10, 25, 2, 30)) == [
        utc(2026, 10, 24, 23),
        utc(2026, 10, 25, 0),
        utc(2026, 10, 25, 1),
        utc(2026, 10, 25, 2),
    ]


def test_fires_quarter_hourly_through_fold_in_due_order() -> None:
    """*/15 fires every 15 real minutes through the repeated hour, strictly in due order."""
    plan = CronPlan("*/15 * * * *", TORONTO)
    start = utc(2026, 11, 1, 4, 45)
    fires = list(plan.fires(start, utc(2026, 11, 1, 7, 15)))
    assert [fire.due for fire in fires] == [
        start + timedelta(minutes=15 * step) for step in range(1, 11)
    ]
    # 05:00-05:45 UTC are 01:xx EDT, 06:00-06:45 UTC the repeated 01:xx EST.
    assert [fire.note for fire in fires] == [""] * 4 + ["repeated"] * 4 + [""] * 2
    assert plan.next_fire(utc(2026, 11, 1, 5, 50)) == Fire(
        due=utc(2026, 11, 1, 6), wall=datetime(2026, 11, 1, 1, 0), note="repeated"
    )


def test_fires_range_step_hours_through_fold_every_real_hour() -> None:
    """An hour step that does not start with * (1-23/2) also runs the repeated 01:00."""
    plan = CronPlan("0 1-23/2 * * *", TORONTO)
    # 01:00 EDT is 05:00 UTC, the repeated 01:00 EST 06:00 UTC, 03:00 EST 08:00 UTC.
    fires = list(plan.fires(utc(2026, 11, 1, 4), utc(2026, 11, 1, 8)))
    assert [fire.due for fire in fires] == [utc(2026, 11, 1, hour) for hour in (5, 6, 8)]
    assert [fire.note for fire in fires] == ["", "repeated", ""]


def test_fires_fixed_hour_list_through_fold_first() -> None:
    """An hour list (no * or step) follows on_fold="first": no repeated fire."""
    plan = CronPlan("0 0-3 * * *", TORONTO)
    assert dues(plan, utc(2026, 11, 1, 3, 30), utc(2026, 11, 1, 8, 30)) == [
        utc(2026, 11, 1, hour) for hour in (4, 5, 7, 8)
    ]


# --- wall-clock jumps of any size ----------------------------------------------------------
#
# The tz database holds jumps of a whole day. Pacific/Apia went from -10 to +14 at
# 2011-12-30 10:00 UTC: 2011-12-29 23:59:59 -10 was followed by 2011-12-31 00:00 +14,
# so 2011-12-30 never happened there. Pacific/Kwajalein went from -12 to +12 at
# 1993-08-21 12:00 UTC: 1993-08-21 did not happen. America/Anchorage went from
# +14:00:24 to -9:59:36 at 1867-10-19 00:31:13 UTC (the Alaska purchase): the wall
# clock went back from 1867-10-19 14:31:37 to 1867-10-18 14:31:37, so a day happened
# twice.

APIA = "Pacific/Apia"
KWAJALEIN = "Pacific/Kwajalein"
ANCHORAGE = "America/Anchorage"


def chained(plan: CronPlan, after: datetime, until: datetime, limit: int = 10_000) -> list[Fire]:
    """next_fire() called again and again from ``after``, up to ``until`` (at most ``limit``)."""
    found: list[Fire] = []
    while len(found) < limit and (fire := plan.next_fire(after)).due <= until:
        found.append(fire)
        after = fire.due
    return found


def test_fires_skipped_calendar_day_shift() -> None:
    """Apia's missing 2011-12-30: its 12:00 runs at the end of the gap (00:00 +14 on the 31st)."""
    plan = CronPlan("0 12 * * *", APIA)
    after, until = utc(2011, 12, 28), utc(2012, 1, 2)
    fires = list(plan.fires(after, until))
    assert fires == [
        Fire(utc(2011, 12, 28, 22), datetime(2011, 12, 28, 12)),
        Fire(utc(2011, 12, 29, 22), datetime(2011, 12, 29, 12)),
        Fire(utc(2011, 12, 30, 10), datetime(2011, 12, 30, 12), "shifted"),
        Fire(utc(2011, 12, 30, 22), datetime(2011, 12, 31, 12)),
        Fire(utc(2011, 12, 31, 22), datetime(2012, 1, 1, 12)),
        Fire(utc(2012, 1, 1, 22), datetime(2012, 1, 2, 12)),
    ]
    assert chained(plan, after, until) == fires


def test_fires_skipped_calendar_day_skip() -> None:
    """With on_gap skip nothing runs for Apia's missing day; the slot is reported on request."""
    plan = CronPlan("0 12 * * *", APIA, on_gap="skip")
    after, until = utc(2011, 12, 29), utc(2011, 12, 31)
    assert dues(plan, after, until) == [utc(2011, 12, 29, 22), utc(2011, 12, 30, 22)]
    # 12:00 on the 30th read with the old offset (-10) would have been 22:00 UTC, the
    # instant of the 31st's 12:00 +14: a real fire has it, so nothing is reported.
    assert notes(plan, after, until, include_skipped=True) == ["", ""]
    assert chained(plan, after, until) == list(plan.fires(after, until))


def test_fires_skipped_day_of_month_and_weekday() -> None:
    """A cron for the missing day itself (the 30th, a Friday) fires at the gap's end or never."""
    after, until = utc(2011, 12, 1), utc(2012, 1, 31)
    shift = CronPlan("0 9 30 * *", APIA)
    # 30 Dec: shifted to 00:00 +14 on the 31st; 30 Jan: 09:00 +14 (Apia's summer time).
    assert dues(shift, after, until) == [utc(2011, 12, 30, 10), utc(2012, 1, 29, 19)]
    skip = CronPlan("0 9 * * fri", APIA, on_gap="skip")
    fridays = dues(skip, utc(2011, 12, 20), utc(2012, 1, 10))
    # Fridays 23 Dec (-10), [30 Dec skipped], 6 Jan (+14).
    assert fridays == [utc(2011, 12, 23, 19), utc(2012, 1, 5, 19)]
    skipped = [fire for fire in skip.fires(after, until, include_skipped=True) if fire.note]
    assert skipped == [Fire(utc(2011, 12, 30, 19), datetime(2011, 12, 30, 9), "skipped")]


def test_fires_skipped_day_kwajalein() -> None:
    """Kwajalein's missing 1993-08-21: the shifted fire comes before the next day's fire."""
    plan = CronPlan("0 9 * * *", KWAJALEIN)
    fires = list(plan.fires(utc(1993, 8, 20), utc(1993, 8, 23)))
    assert fires == [
        Fire(utc(1993, 8, 20, 21), datetime(1993, 8, 20, 9)),
        Fire(utc(1993, 8, 21, 12), datetime(1993, 8, 21, 9), "shifted"),
        Fire(utc(1993, 8, 21, 21), datetime(1993, 8, 22, 9)),
        Fire(utc(1993, 8, 22, 21), datetime(1993, 8, 23, 9)),
    ]


def test_fires_step_hours_through_skipped_day_keep_real_time() -> None:
    """Every six hours through Kwajalein's missing day: every six real hours, nothing doubled."""
    plan = CronPlan("0 */6 * * *", KWAJALEIN)
    after = utc(1993, 8, 20, 0)
    assert dues(plan, after, utc(1993, 8, 22)) == [
        after + timedelta(hours=6 * step) for step in range(1, 9)
    ]


@pytest.mark.parametrize(
    ("on_fold", "expected"),
    [
        pytest.param(
            "first",
            [
                Fire(utc(1867, 10, 17, 21, 59, 36), datetime(1867, 10, 18, 12)),
                Fire(utc(1867, 10, 18, 21, 59, 36), datetime(1867, 10, 19, 12)),
                Fire(utc(1867, 10, 20, 21, 59, 36), datetime(1867, 10, 20, 12)),
            ],
            id="first",
        ),
        pytest.param(
            "both",
            [
                Fire(utc(1867, 10, 17, 21, 59, 36), datetime(1867, 10, 18, 12)),
                Fire(utc(1867, 10, 18, 21, 59, 36), datetime(1867, 10, 19, 12)),
                Fire(utc(1867, 10, 19, 21, 59, 36), datetime(1867, 10, 19, 12), "repeated"),
                Fire(utc(1867, 10, 20, 21, 59, 36), datetime(1867, 10, 20, 12)),
            ],
            id="both",
        ),
    ],
)
def test_fires_repeated_day(on_fold: str, expected: list[Fire]) -> None:
    """Alaska's repeated day: 12:00 on 1867-10-19 happened at +14:00:24 and again at -9:59:36."""
    plan = CronPlan("0 12 * * *", ANCHORAGE, on_fold=on_fold)
    after, until = utc(1867, 10, 17, 12), utc(1867, 10, 21)
    assert list(plan.fires(after, until)) == expected
    assert chained(plan, after, until) == expected


def test_fires_hourly_through_repeated_day() -> None:
    """Hourly through Alaska's repeated day: every real hour, the second day noted "repeated"."""
    plan = CronPlan("0 * * * *", ANCHORAGE)
    after = utc(1867, 10, 18, 12)
    fires = list(plan.fires(after, after + timedelta(hours=36)))
    # Whole wall-clock hours are :59:36 UTC at both offsets.
    assert [fire.due for fire in fires] == [
        utc(1867, 10, 18, 12, 59, 36) + timedelta(hours=step) for step in range(36)
    ]
    # Up to 00:31:13 UTC on the 19th the wall clock reads +14:00:24, then it repeats.
    assert [fire.note for fire in fires] == [""] * 12 + ["repeated"] * 24


# --- against the brute-force reference --------------------------------------------------

MINUTE_FIELDS = ["*", "*/15", "0", "30", "0,30", "5-10", "*/7", "59", "10/20"]
HOUR_FIELDS = ["*", "*/2", "*/5", "0", "1", "2", "3", "12", "23", "0-23", "1-3", "10-14/2", "0,12"]
MONTH_DAY_FIELDS = ["*", "*", "*", "?", "*/2", "*/7", "L", "15W", "1-31", "10-20", "1,15,30"]
WEEKDAY_FIELDS = ["*", "*", "*", "?", "1-5", "0,6", "*/3", "mon#2", "L5", "0-7", "sun", "fri"]


def random_expressions(seed: str, count: int) -> list[str]:
    """``count`` expressions drawn from the pools above, the same ones for the same seed."""
    rng = random.Random(seed)
    return [
        " ".join(
            (
                rng.choice(MINUTE_FIELDS),
                rng.choice(HOUR_FIELDS),
                rng.choice(MONTH_DAY_FIELDS),
                "*",
                rng.choice(WEEKDAY_FIELDS),
            )
        )
        for _ in range(count)
    ]


@functools.cache
def large_jumps() -> list[tuple[str, datetime]]:
    """Every change of offset of 12 hours or more in the tz database (one zone per instant)."""
    seen: dict[tuple[datetime, timedelta, timedelta], str] = {}
    for zone in sorted(available_timezones()):
        for instant, before, after in offset_changes(zone):
            if abs(after - before) >= timedelta(hours=12):
                seen.setdefault((instant, before, after), zone)
    return sorted((zone, instant) for (instant, _, _), zone in seen.items())


#: Ordinary daylight-saving changes, both ways: hour, half-hour (Lord Howe), two-hour
#: (Troll), quarter-hour (Kathmandu, 1986) and negative (Dublin's winter time) ones.
EVERYDAY_CHANGES = [
    (TORONTO, utc(2026, 3, 8, 7)),
    (TORONTO, utc(2026, 11, 1, 6)),
    (BERLIN, utc(2026, 3, 29, 1)),
    (BERLIN, utc(2026, 10, 25, 1)),
    (LORD_HOWE, utc(2026, 4, 4, 15)),
    (LORD_HOWE, utc(2026, 10, 3, 15, 30)),
    ("Antarctica/Troll", utc(2026, 3, 29, 1)),
    ("Antarctica/Troll", utc(2026, 10, 25, 1)),
    ("Asia/Kathmandu", utc(1985, 12, 31, 18, 30)),
    ("Europe/Dublin", utc(2026, 3, 29, 1)),
    ("Europe/Dublin", utc(2026, 10, 25, 1)),
]


def reference_cases() -> list[Any]:
    cases = []
    for zone, instant in [*large_jumps(), *EVERYDAY_CHANGES]:
        for expression in random_expressions(f"{zone} {instant}", 8):
            cases.append(
                pytest.param(zone, instant, expression, id=f"{zone}-{instant:%Y%m%d}-{expression}")
            )
    return cases


def test_large_jumps_found() -> None:
    """The scan finds the day-long jumps: Apia's and Kwajalein's skipped days, Alaska's repeat."""
    found = large_jumps()
    assert len(found) >= 15
    instants = {instant for _, instant in found}
    assert utc(2011, 12, 30, 10) in instants
    assert utc(1993, 8, 21, 12) in instants
    assert utc(1867, 10, 19, 0, 31, 13) in instants


@pytest.mark.parametrize(("zone", "instant", "expression"), reference_cases())
def test_fires_match_reference(zone: str, instant: datetime, expression: str) -> None:
    """Around a change of offset, fires() and next_fire() agree with the brute-force reference.

    For each policy pair: the slots over a day either side (skipped ones included), the
    fires alone, and, started at moments inside and around the change, fires() and
    next_fire() chained (20 fires from each start, which covers the change for
    expressions that fire every minute).
    """
    after, until = instant - timedelta(days=1), instant + timedelta(days=1)
    rng = random.Random(expression)
    starts = [
        instant,
        instant - timedelta(seconds=1),
        *(instant + timedelta(minutes=rng.randint(-1439, 1439)) for _ in range(6)),
    ]
    for on_gap, on_fold in itertools.product(GAP_POLICIES, FOLD_POLICIES):
        plan = CronPlan(expression, zone, on_gap=on_gap, on_fold=on_fold)
        expected = [
            Fire(slot.due, slot.wall, slot.note)
            for slot in reference_fires(
                expression, zone, after, until, on_gap=on_gap, on_fold=on_fold
            )
        ]
        assert list(plan.fires(after, until, include_skipped=True)) == expected
        firing = [fire for fire in expected if fire.note != "skipped"]
        assert list(plan.fires(after, until)) == firing
        for start in [after, *starts]:
            later = [fire for fire in firing if fire.due > start]
            assert list(plan.fires(start, until)) == later
            assert chained(plan, start, until, limit=20) == later[:20]


def test_offset_changes_never_overlap() -> None:
    """What the engine's ordering rests on holds for the installed tz database.

    CronPlan releases a slot once a later wall time's earliest reading is past it, which is
    right as long as two successive changes of a zone's offset are farther apart than
    either change is large (the fold or gap of one change does not reach the next). The
    tz database's closest changes are days apart.
    """
    for zone in available_timezones():
        previous: tuple[datetime, timedelta] | None = None
        for instant, before, after in offset_changes(zone):
            jump = abs(after - before)
            if previous is not None:
                previous_instant, previous_jump = previous
                assert instant - previous_instant > max(jump, previous_jump), zone
            previous = (instant, jump)

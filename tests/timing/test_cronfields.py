"""Tests for django_weft.timing.cronfields: the five fields read once, and the times they match.

The messages for bad expressions, and the day rule seen through fires, are tested in
test_cron.py, through CronPlan; this file tests what parse() builds.
"""

from __future__ import annotations

import itertools
from datetime import datetime

import pytest

from django_weft.timing.cronfields import CronError, parse


def test_parse_values_sorted() -> None:
    """Lists, ranges, steps and names become the sorted values each field allows."""
    fields = parse("*/20,5 1-3 * */4 mon-fri")
    assert fields.minutes == (0, 5, 20, 40)
    assert fields.hours == (1, 2, 3)
    assert fields.months == (1, 5, 9)
    assert fields.days.weekdays == {1, 2, 3, 4, 5}
    assert fields.days.month_days == frozenset(range(1, 32))


def test_parse_sunday_as_seven() -> None:
    """7 is Sunday, stored as 0, in values, ranges and stepped ranges alike."""
    assert parse("0 0 * * 7").days.weekdays == {0}
    assert parse("0 0 * * 5-7").days.weekdays == {5, 6, 0}
    assert parse("0 0 * * 1-7/3").days.weekdays == {1, 4, 0}


def test_parse_day_extras() -> None:
    """L, 15W, mon#2 and L5 are kept apart from the plain day values."""
    days = parse("0 0 1,L,15W * mon#2,L5,wed").days
    assert days.month_days == {1}
    assert days.last_day
    assert days.nearest_weekdays == {15}
    assert days.nth_weekdays == {(1, 2)}
    assert days.last_weekdays == {5}
    assert days.weekdays == {3}


@pytest.mark.parametrize(
    ("month_day", "weekday", "month_days_star", "weekdays_star"),
    [
        ("*", "*", True, True),
        ("*/7", "1", True, False),
        ("*,10", "1", True, False),
        ("10,*", "1", False, False),
        ("1-31/7", "1", False, False),
        ("?", "*/2", True, True),
        ("1", "?", False, True),
        ("L", "0-7", False, False),
    ],
)
def test_parse_day_star_flags(
    month_day: str, weekday: str, month_days_star: bool, weekdays_star: bool
) -> None:
    """A day field is "unrestricted" for the day rule when its text starts with * (or is ?)."""
    days = parse(f"0 0 {month_day} * {weekday}").days
    assert (days.month_days_star, days.weekdays_star) == (month_days_star, weekdays_star)
    assert days.both_must_match == (month_days_star or weekdays_star)


@pytest.mark.parametrize(
    ("hour", "real_time"),
    [
        ("*", True),
        ("*/2", True),
        ("0-23/2", True),
        ("1-23/2", True),
        ("0-23", False),
        ("1,2", False),
    ],
)
def test_parse_real_time_hours(hour: str, real_time: bool) -> None:
    """An hour field that is * or has a step means "every so many real hours"."""
    assert parse(f"0 {hour} * * *").real_time_hours is real_time


def test_parse_shared_by_equal_expressions() -> None:
    """Schedules with the same expression share one parse."""
    assert parse("0 7 * * *") is parse("0 7 * * *")


@pytest.mark.parametrize(
    "expression",
    # The fifth Monday of February can only be the 29th, which */3 (1, 4 ... 28) misses.
    ["0 0 30 2 *", "0 0 31 2,4,6,9,11 *", "0 0 30W 2 *", "0 0 */3 2 mon#5"],
)
def test_parse_never_occurs(expression: str) -> None:
    """A day rule that matches no day of its months in 400 years never occurs."""
    with pytest.raises(CronError, match="never occurs"):
        parse(expression)


def test_parse_rare_but_occurring() -> None:
    """A fifth Monday in February happens (2016, 2044...): accepted, and found."""
    fields = parse("0 0 * 2 mon#5")
    assert fields.days.days_of(2016, 2) == (29,)
    assert fields.days.days_of(2026, 2) == ()


def test_days_of_last_day_and_leap_years() -> None:
    """L is the month's own last day, 29 in a leap February and 28 otherwise."""
    days = parse("0 0 L 2 *").days
    assert days.days_of(2028, 2) == (29,)
    assert days.days_of(2026, 2) == (28,)
    assert days.days_of(2100, 2) == (28,)


def test_walls_from_partial_start() -> None:
    """Walls start at the first match at or after the start; seconds round up to the minute."""
    walls = parse("0,30 9,17 * * *").walls_from(datetime(2026, 3, 7, 9, 0, 1))
    assert list(itertools.islice(walls, 4)) == [
        datetime(2026, 3, 7, 9, 30),
        datetime(2026, 3, 7, 17, 0),
        datetime(2026, 3, 7, 17, 30),
        datetime(2026, 3, 8, 9, 0),
    ]


def test_walls_from_across_month_and_year() -> None:
    """Walls run on into the next month and year, skipping the months not allowed."""
    walls = parse("0 0 L 2,12 *").walls_from(datetime(2026, 12, 31, 0, 0))
    assert list(itertools.islice(walls, 3)) == [
        datetime(2026, 12, 31),
        datetime(2027, 2, 28),
        datetime(2027, 12, 31),
    ]


def test_walls_from_start_after_last_match_of_day() -> None:
    """A start after a day's last match goes on with the next day's first."""
    walls = parse("15 8 * * *").walls_from(datetime(2026, 3, 7, 8, 16))
    assert next(walls) == datetime(2026, 3, 8, 8, 15)


def test_walls_from_end_of_range() -> None:
    """The walk stops after 9999-12-31."""
    assert list(parse("59 23 31 12 *").walls_from(datetime(9999, 1, 1))) == [
        datetime(9999, 12, 31, 23, 59)
    ]

"""Plans and fires in words, for operators: the preview, the admin, log lines.

Pure functions of their inputs (no clock, no database). :func:`describe` says a cron
plan in a short phrase ("07:00 every day, America/Toronto"); :func:`dst_note` says
what a daylight-saving change did to a fire ("DST fold: 01:30 happens twice, second
run"), and :func:`clock_change_note` that a fire's day is one of a clock change ("DST
day: clocks change from EST to EDT"). Each is the one place its words are made, so
every screen says the same.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django_weft.timing.cron import Fire
from django_weft.timing.cronfields import CronFields, DayRule, parse

_WEEKDAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_NOTES = {
    "shifted": "DST gap: {wall} does not exist, moved to the end of the gap",
    "skipped": "DST gap: {wall} does not exist, skipped",
    "repeated": "DST fold: {wall} happens twice, second run",
}
#: A phrase lists at most this many wall times (or days of the month) one by one.
_MOST_LISTED = 4


def dst_note(fire: Fire) -> str:
    """What a daylight-saving change did to this fire, or "" for an ordinary one."""
    if not fire.note:
        return ""
    return _NOTES[fire.note].format(wall=f"{fire.wall:%H:%M}")


def clock_change_note(moment: datetime, zone: ZoneInfo) -> str:
    """ "DST day: clocks change from EST to EDT" when ``zone``'s clocks change on the day
    ``moment`` falls on there (between its wall-clock midnights), else "".

    A fire the change did not move still falls at another UTC time than the day before
    (07:00 EST is 12:00 UTC, 07:00 EDT 11:00), which is what an operator checks on such a
    day."""
    return _clock_change(moment.astimezone(zone).date(), zone)


@functools.lru_cache(maxsize=1024)
def _clock_change(day: date, zone: ZoneInfo) -> str:
    start = datetime.combine(day, time(), zone)
    end = start + timedelta(days=1)  # the next wall-clock midnight
    if start.utcoffset() == end.utcoffset():
        return ""
    return f"DST day: clocks change from {start.tzname()} to {end.tzname()}"


def describe(expression: str, zone: str) -> str:
    """A cron plan in a short phrase, or the expression and its zone when none fits.

    "07:00 every day, America/Toronto", "every 15 minutes", "09:30 on weekdays,
    Europe/Berlin", "00:00 on day 1 of the month, UTC"; "0 9 1-7 * 1 (Europe/Berlin)"
    for a plan of no common shape. Raises CronError for an expression that does not
    parse; the zone is only named, not checked.
    """
    fields = parse(expression)
    times = _times(fields)
    dates = _dates(fields)
    if times is None or dates is None:
        # The zone in brackets: a comma after the expression would read as a cron list.
        return f"{' '.join(expression.split())} ({zone})"
    phrase, repeats = times
    if repeats:
        # "every hour at :30" already says "every day"; months and weekdays still count.
        dates = dates.removeprefix("every day").strip()
    if phrase.endswith(("minute", "minutes")) and not dates:
        return phrase  # the same instants whatever the zone's offset
    return f"{' '.join(part for part in (phrase, dates) if part)}, {zone}"


def _times(fields: CronFields) -> tuple[str, bool] | None:
    """When in a day it fires, and whether the phrase repeats through the day by itself."""
    minutes, hours = fields.minutes, fields.hours
    every_hour = len(hours) == 24
    minute_step = _step_from_zero(minutes, 60)
    hour_step = _step_from_zero(hours, 24)
    if every_hour and minute_step == 1:
        return "every minute", True
    if every_hour and minute_step is not None:
        return f"every {minute_step} minutes", True
    if every_hour and len(minutes) <= _MOST_LISTED:
        return f"every hour at {_listed(f':{minute:02d}' for minute in minutes)}", True
    if hour_step is not None and hour_step > 1 and len(minutes) == 1:
        return f"every {hour_step} hours at :{minutes[0]:02d}", True
    if len(hours) * len(minutes) <= _MOST_LISTED:
        return _listed(f"{hour:02d}:{minute:02d}" for hour in hours for minute in minutes), False
    return None


def _step_from_zero(values: tuple[int, ...], size: int) -> int | None:
    """``s`` when ``values`` are 0, s, 2s... through a field of ``size`` that s divides."""
    if len(values) < 2 or values[0] != 0:
        return None
    step = values[1]
    return step if size % step == 0 and values == tuple(range(0, size, step)) else None


def _dates(fields: CronFields) -> str | None:
    """Which days it fires: "every day", "on weekdays", "on 1 January"... or None."""
    rule = fields.days
    every_month = len(fields.months) == 12
    months = "" if every_month else f"in {_listed(_MONTHS[month - 1] for month in fields.months)}"
    if rule.nearest_weekdays or rule.nth_weekdays or rule.last_weekdays:
        return None
    all_month_days = rule.every_month_day and not rule.last_day
    if rule.both_must_match:
        every_day = all_month_days and rule.every_weekday
    else:  # neither field starts with "*": a day matching either runs
        every_day = all_month_days or rule.every_weekday
    if every_day:
        days = "every day"
    elif rule.both_must_match and all_month_days:
        days = _weekdays(rule.weekdays)
    elif rule.both_must_match and rule.every_weekday:
        if len(fields.months) == 1 and len(rule.month_days) == 1 and not rule.last_day:
            (day,) = rule.month_days
            return f"on {day} {_MONTHS[fields.months[0] - 1]}"
        month_days = _month_days(rule)
        if month_days is None:
            return None
        days = month_days
    else:
        return None  # both fields restricted: "either" makes no short phrase
    return f"{days} {months}".strip()


def _weekdays(weekdays: frozenset[int]) -> str:
    if weekdays == {1, 2, 3, 4, 5}:
        return "on weekdays"
    if weekdays == {0, 6}:
        return "on weekends"
    monday_first = sorted(weekdays, key=lambda day: (day == 0, day))
    return f"on {_listed(f'{_WEEKDAYS[day]}s' for day in monday_first)}"


def _month_days(rule: DayRule) -> str | None:
    days = sorted(rule.month_days)
    if not days:
        return "on the last day of the month"
    if (
        len(days) > _MOST_LISTED
        and not rule.last_day
        and days == list(range(days[0], days[-1] + 1))
    ):
        return f"on days {days[0]}-{days[-1]} of the month"
    named = [str(day) for day in days] + (["the last day"] if rule.last_day else [])
    if len(named) > _MOST_LISTED:
        return None
    noun = "day" if len(days) == 1 else "days"
    return f"on {noun} {_listed(named)} of the month"


def _listed(words: Iterable[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    items = list(words)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"

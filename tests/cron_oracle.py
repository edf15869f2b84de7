"""A brute-force reference for ``django_weft.timing.cron``: every wall-clock minute, one by one.

Written apart from the engine, on purpose, so that the two can be compared:

- each field is read by testing every value against the text of each list item
  (nothing is expanded into sorted lists, nothing is shared with ``cronfields``);
- the day rule is Debian cron's line, transcribed: the DOM_STAR and DOW_STAR flags come
  from the first character of the field's text, and
  ``(DOM_STAR || DOW_STAR) ? (dom && dow) : (dom || dow)``;
- ``15W`` is "the Monday-to-Friday day of the month closest to the 15th";
- each matching minute is read with ``fold=0`` and ``fold=1`` through ``zoneinfo`` and
  the DST policies are applied to the two readings; the end of a gap is taken from the
  tz database's own list of transitions (which the pure-Python ``zoneinfo`` keeps), not
  found by bisection.
"""

from __future__ import annotations

import bisect
import calendar
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo
from zoneinfo import _zoneinfo as pure_zoneinfo  # type: ignore[attr-defined]

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
RANK = {"": 0, "repeated": 1, "shifted": 2, "skipped": 3}
#: Walls this far either side of a window can still have slots inside it.
MARGIN = timedelta(hours=26)


@dataclass(frozen=True)
class Slot:
    due: datetime
    wall: datetime
    note: str


def _number(text: str, names: tuple[str, ...], base: int) -> int:
    lowered = text.lower()
    return names.index(lowered) + base if lowered in names else int(text)


def _item_allows(
    item: str, value: int, low: int, top: int, names: tuple[str, ...], base: int
) -> bool:
    """Whether one list item (``*``, ``N``, ``A-B``, each with an optional ``/S``) allows value."""
    span, slash, step_text = item.partition("/")
    step = int(step_text) if slash else 1
    if span == "*":
        first, last = low, top
    elif "-" in span:
        first_text, last_text = span.split("-")
        first, last = _number(first_text, names, base), _number(last_text, names, base)
    else:
        first = _number(span, names, base)
        last = max(first, top) if slash else first
    return first <= value <= last and (value - first) % step == 0


def _allows(
    text: str, value: int, low: int, top: int, names: tuple[str, ...] = (), base: int = 0
) -> bool:
    return any(_item_allows(item, value, low, top, names, base) for item in text.split(","))


def _nearest_weekday(target: int, year: int, month: int) -> int | None:
    length = calendar.monthrange(year, month)[1]
    if target > length:
        return None
    weekdays = [day for day in range(1, length + 1) if date(year, month, day).weekday() < 5]
    return min(weekdays, key=lambda day: abs(day - target))


def _month_day_matches(text: str, day: date) -> bool:
    if text == "?":
        return True
    length = calendar.monthrange(day.year, day.month)[1]
    for item in text.split(","):
        lowered = item.lower()
        if lowered == "l":
            if day.day == length:
                return True
        elif lowered.endswith("w"):
            if _nearest_weekday(int(lowered[:-1]), day.year, day.month) == day.day:
                return True
        elif _item_allows(item, day.day, 1, 31, (), 0):
            return True
    return False


def _weekday_matches(text: str, day: date) -> bool:
    if text == "?":
        return True
    weekday = day.isoweekday() % 7  # Sunday 0
    length = calendar.monthrange(day.year, day.month)[1]
    for item in text.split(","):
        lowered = item.lower()
        if "#" in lowered:
            name, week = lowered.split("#")
            if _number(name, WEEKDAYS, 0) % 7 == weekday and (day.day + 6) // 7 == int(week):
                return True
        elif lowered.startswith("l"):
            if _number(lowered[1:], WEEKDAYS, 0) % 7 == weekday and day.day + 7 > length:
                return True
        elif _item_allows(item, weekday, 0, 6, WEEKDAYS, 0) or (
            weekday == 0 and _item_allows(item, 7, 0, 6, WEEKDAYS, 0)
        ):
            return True
    return False


def day_matches(month_day: str, weekday: str, day: date) -> bool:
    """Debian cron's find_jobs() day test, for the two day fields' texts."""
    dom_star = month_day[0] in "*?"
    dow_star = weekday[0] in "*?"
    dom = _month_day_matches(month_day, day)
    dow = _weekday_matches(weekday, day)
    return (dom and dow) if (dom_star or dow_star) else (dom or dow)


@functools.cache
def _transitions(zone: str) -> list[int]:
    return list(pure_zoneinfo.ZoneInfo.no_cache(zone)._trans_utc)


def _gap_end(zone: str, before: datetime, after: datetime) -> datetime:
    """The tz database's transition in (before, after]."""
    stamps = _transitions(zone)
    index = bisect.bisect_right(stamps, before.timestamp())
    assert index < len(stamps), (zone, before, after)
    assert stamps[index] <= after.timestamp(), (zone, before, after)
    return datetime.fromtimestamp(stamps[index], UTC)


@functools.cache
def _walls(expression: str, start: datetime, end: datetime) -> tuple[datetime, ...]:
    """Every wall-clock minute in [start, end] that the expression matches."""
    return tuple(_matching_minutes(expression, start, end))


def _matching_minutes(expression: str, start: datetime, end: datetime) -> Iterator[datetime]:
    minute, hour, month_day, month, weekday = expression.split()
    # Each value tested against the text once, not once per minute of the window.
    minutes = {value for value in range(60) if _allows(minute, value, 0, 59)}
    hours = {value for value in range(24) if _allows(hour, value, 0, 23)}
    wall = start.replace(second=0, microsecond=0)
    day_cache: dict[date, bool] = {}
    while wall <= end:
        today = wall.date()
        if today not in day_cache:
            day_cache[today] = _allows(month, wall.month, 1, 12, MONTHS, 1) and day_matches(
                month_day, weekday, today
            )
        if day_cache[today] and wall.hour in hours and wall.minute in minutes:
            yield wall
        wall += timedelta(minutes=1)


def reference_fires(
    expression: str,
    zone: str,
    after: datetime,
    until: datetime,
    *,
    on_gap: str = "shift",
    on_fold: str = "first",
) -> list[Slot]:
    """The slots (skipped ones included) with after < due <= until, one per instant."""
    tz = ZoneInfo(zone)
    hour_text = expression.split()[1]
    real_time = hour_text.startswith("*") or "/" in hour_text
    fold_both = on_fold == "both" or real_time
    gap_skip = on_gap == "skip" or real_time
    start = after.astimezone(UTC).replace(tzinfo=None) - MARGIN
    end = until.astimezone(UTC).replace(tzinfo=None) + MARGIN
    slots: list[Slot] = []
    for wall in _walls(expression, start, end):
        first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
        second = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
        if first == second:
            slots.append(Slot(first, wall, ""))
        elif first < second:
            slots.append(Slot(first, wall, ""))
            if fold_both:
                slots.append(Slot(second, wall, "repeated"))
        elif gap_skip:
            slots.append(Slot(first, wall, "skipped"))
        else:
            slots.append(Slot(_gap_end(zone, second, first), wall, "shifted"))
    slots.sort(key=lambda slot: (slot.due, RANK[slot.note], slot.wall))
    kept: list[Slot] = []
    for slot in slots:
        if after < slot.due <= until and (not kept or kept[-1].due != slot.due):
            kept.append(slot)
    return kept


def offset_changes(zone: str) -> Iterator[tuple[datetime, timedelta, timedelta]]:
    """Each change of a zone's UTC offset in the tz database: (instant, before, after)."""
    info = pure_zoneinfo.ZoneInfo.no_cache(zone)
    before = info._tti_before.utcoff if info._tti_before else None
    for stamp, kind in zip(info._trans_utc, info._ttinfos, strict=True):
        if before is not None and kind.utcoff != before:
            yield datetime.fromtimestamp(stamp, UTC), before, kind.utcoff
        before = kind.utcoff

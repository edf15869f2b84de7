"""The five fields of a cron expression, read once into the values each one allows.

Pure calendar logic: no time zone, no clock, no Django. :func:`parse` reads an
expression and refuses what it cannot read with a :class:`CronError` that names the
field, the value and what would be accepted; the :class:`CronFields` it returns list
the matching wall-clock times in order (:meth:`CronFields.walls_from`), which
:mod:`django_weft.timing.cron` then maps to instants in a zone.

The grammar is Vixie cron's (numbers, ``*``, ranges, lists, steps, month and weekday
names, Sunday as 0 or 7), plus ``start/step`` (``10/15`` is ``10-59/15``) and the
day extras ``L``, ``15W``, ``1#2``, ``L5`` and ``?``. The two day fields combine by
Vixie cron's rule, as Debian's cron applies it: a day field whose text starts with
``*`` (``*``, ``*/7``, ``*,5``, and ``?``) is "unrestricted", and if either day field is,
a day must match both fields; otherwise a day matching either field runs.
"""

from __future__ import annotations

import bisect
import calendar
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

MONTH_NAMES = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
WEEKDAY_NAMES = {
    name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
}

#: The Gregorian calendar (weekdays included) repeats every 400 years, so a day rule
#: that matches no day in 400 years never matches at all.
SEARCH_YEARS = 400
_SEARCH_FROM = 2000

#: What vixie-cron style crontabs write instead of five fields, with their five fields.
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

# ASCII digits only: int() would also take "٣".
_NUMBER = re.compile(r"[0-9]+")
_NEAREST_WEEKDAY = re.compile(r"([0-9]+)w")
_NTH_WEEKDAY = re.compile(r"([^#]+)#(.*)")


class CronError(ValueError):
    """Raised for anything that makes a cron plan unusable; str(error) is a user-facing message."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field  # which input is wrong: "cron", "timezone", "on_gap" or "on_fold"

    def __reduce__(self) -> tuple[type[CronError], tuple[str, str]]:
        # Keep the field when the error is pickled (e.g. to another process).
        return (type(self), (str(self), self.field))


@dataclass(frozen=True, eq=False)
class _Grammar:
    """What one field accepts: its bounds, its names and how to say them in a message."""

    name: str
    low: int
    high: int
    names: dict[str, int]
    accepted: str  # "use ..." in a message about a value that is not a number or name
    noun: str  # "is not a <noun>"


_MINUTE = _Grammar("minute", 0, 59, {}, "use 0-59", "number")
_HOUR = _Grammar("hour", 0, 23, {}, "use 0-23", "number")
_DAY_OF_MONTH = _Grammar(
    "day-of-month",
    1,
    31,
    {},
    "use 1-31, L (the last day of the month) or a day and W (its nearest weekday), e.g. 15W",
    "day of the month",
)
_MONTH = _Grammar("month", 1, 12, MONTH_NAMES, "use 1-12 or jan-dec", "month")
_DAY_OF_WEEK = _Grammar(
    "day-of-week",
    0,
    7,
    WEEKDAY_NAMES,
    "use 0-7 (0 and 7 are Sunday) or sun-sat, a day and # (mon#2: the second Monday) "
    "or L and a day (L5: the last Friday)",
    "day of the week",
)


@dataclass(frozen=True)
class DayRule:
    """Which days of a month run: the two day fields and how Vixie cron combines them."""

    #: Day-of-month numbers (1-31), ``L`` (the month's last day) and ``15W`` days.
    month_days: frozenset[int]
    last_day: bool
    nearest_weekdays: frozenset[int]
    #: Weekdays (0 is Sunday), ``1#2`` (weekday, week of the month) and ``L5`` weekdays.
    weekdays: frozenset[int]
    nth_weekdays: frozenset[tuple[int, int]]
    last_weekdays: frozenset[int]
    #: Whether the field's text starts with "*" (or is "?"): Vixie cron's DOM_STAR and
    #: DOW_STAR flags. Either one makes a day match both fields instead of either.
    month_days_star: bool
    weekdays_star: bool
    _cache: dict[tuple[int, int], tuple[int, ...]] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )

    @property
    def both_must_match(self) -> bool:
        return self.month_days_star or self.weekdays_star

    @property
    def every_month_day(self) -> bool:
        """Whether the day-of-month field alone matches every day of every month."""
        return len(self.month_days) == 31

    @property
    def every_weekday(self) -> bool:
        """Whether the day-of-week field alone matches every day."""
        return len(self.weekdays) == 7

    def days_of(self, year: int, month: int) -> tuple[int, ...]:
        """The days of ``month`` in ``year`` that run, in order."""
        key = (year, month)
        days = self._cache.get(key)
        if days is None:
            days = self._cache[key] = self._compute(year, month)
        return days

    def _compute(self, year: int, month: int) -> tuple[int, ...]:
        first_weekday, length = calendar.monthrange(year, month)  # Monday is 0 there
        nearest = {
            _nearest_weekday(day, (first_weekday + day) % 7, length)
            for day in self.nearest_weekdays
            if day <= length
        }
        days = []
        for day in range(1, length + 1):
            weekday = (first_weekday + day) % 7  # Sunday is 0 here, as in cron
            by_month_day = (
                day in self.month_days or (self.last_day and day == length) or day in nearest
            )
            by_weekday = (
                weekday in self.weekdays
                or (weekday, (day - 1) // 7 + 1) in self.nth_weekdays
                or (weekday in self.last_weekdays and day + 7 > length)
            )
            if self.both_must_match:
                matched = by_month_day and by_weekday
            else:
                matched = by_month_day or by_weekday
            if matched:
                days.append(day)
        return tuple(days)


def _nearest_weekday(day: int, weekday: int, length: int) -> int:
    """The Monday-to-Friday day nearest ``day`` within its month (Quartz's ``W``)."""
    if weekday == 6:  # Saturday: the Friday before, or the Monday after the 1st
        return day - 1 if day > 1 else day + 2
    if weekday == 0:  # Sunday: the Monday after, or the Friday before the last day
        return day + 1 if day < length else day - 2
    return day


@dataclass(frozen=True)
class CronFields:
    """A parsed expression: the values each field allows, sorted, and the day rule."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: tuple[int, ...]
    days: DayRule
    #: The hour field is "*" or a step ("*/2", "0-23/2"): "every so many real hours".
    real_time_hours: bool

    def walls_from(self, start: datetime) -> Iterator[datetime]:
        """Every matching wall time at or after ``start`` (naive), in order, to year 9999."""
        year, month, day = start.year, start.month, start.day
        minute = start.minute + bool(start.second or start.microsecond)
        # The rest of the start's own day first, so that the loop over whole days below
        # (what a preview spends its time in) tests nothing per hour or minute.
        if month in self.months and day in self.days.days_of(year, month):
            for hour in _at_least(self.hours, start.hour):
                for now_minute in _at_least(self.minutes, minute if hour == start.hour else 0):
                    yield datetime(year, month, day, hour, now_minute)
        while year <= 9999:
            if month in self.months:
                days = self.days.days_of(year, month)
                for today in days[bisect.bisect_right(days, day) :]:
                    for hour in self.hours:
                        for now_minute in self.minutes:
                            yield datetime(year, month, today, hour, now_minute)
            day = 0  # after the start's month, every day of a month counts
            month += 1
            if month == 13:
                year, month = year + 1, 1


def _at_least(values: tuple[int, ...], least: int) -> tuple[int, ...]:
    return values[bisect.bisect_left(values, least) :]


@functools.lru_cache(maxsize=4096)
def parse(expression: str) -> CronFields:
    """Read a five-field expression, or raise CronError(field="cron") saying what is wrong.

    Cached: schedules that share an expression share its parse.
    """
    texts = expression.split()
    if len(texts) != 5:
        raise CronError(f'invalid cron "{expression}": {_count_problem(texts)}', field="cron")
    minute, hour, month_day, month, weekday = texts
    try:
        fields = CronFields(
            minutes=tuple(sorted(_plain_values(minute, _MINUTE))),
            hours=tuple(sorted(_plain_values(hour, _HOUR))),
            months=tuple(sorted(_plain_values(month, _MONTH))),
            days=_day_rule(month_day, weekday),
            real_time_hours=hour.startswith("*") or "/" in hour,
        )
    except _FieldError as error:
        raise CronError(f'invalid cron "{expression}": {error}', field="cron") from None
    if not _occurs(fields):
        raise CronError(f'cron "{expression}" never occurs', field="cron")
    return fields


class _FieldError(Exception):
    """A problem in one field, worded as the end of a CronError's message."""


def _count_problem(texts: list[str]) -> str:
    if len(texts) == 1 and texts[0].startswith("@"):
        example = _MACROS.get(texts[0].lower())
        return f'macros such as "{texts[0]}" are not supported; write the five fields' + (
            f', e.g. "{example}"' if example else ""
        )
    given = "no field is given" if not texts else f"{len(texts)} fields are given"
    unsupported = "; seconds and years are not supported" if len(texts) > 5 else ""
    return f"{given}; a cron has five: minute hour day-of-month month day-of-week{unsupported}"


def _items(text: str, grammar: _Grammar) -> list[str]:
    """The comma-separated items of a field, refusing empty ones and R/H values."""
    items = text.split(",")
    if "" in items:
        raise _FieldError(
            f'{grammar.name} "{text}" has an empty list item; separate values with one comma, '
            'e.g. "1,15"'
        )
    for item in items:
        base = item.split("/", 1)[0].lower()
        if base in ("r", "h") or base.startswith(("r(", "h(")):
            raise _FieldError(
                f'{grammar.name} "{item}": random (R) and hashed (H) values are not supported; '
                "write the value out, e.g. 17 instead of H"
            )
    return items


def _plain_values(text: str, grammar: _Grammar) -> set[int]:
    """The values of a field made of numbers, names, ``*``, ranges, lists and steps."""
    values: set[int] = set()
    for item in _items(text, grammar):
        values |= _range_values(item, grammar)
    return values


def _range_values(item: str, grammar: _Grammar) -> set[int]:
    """``*``, ``N``, ``A-B``, with an optional ``/step``; ``A/step`` runs to the maximum."""
    span, slash, step_text = item.partition("/")
    if span == "*":
        low, high = grammar.low, _top(grammar)
    elif "-" in span:
        first, _, last = span.partition("-")
        low, high = _value(first, grammar, item), _value(last, grammar, item)
        if low > high:
            raise _FieldError(_reversed(item, first, last, low, high, grammar, bool(slash)))
    else:
        low = _value(span, grammar, item)
        high = max(low, _top(grammar)) if slash else low
    step = _step(step_text, item, grammar) if slash else 1
    values = set(range(low, high + 1, step))
    if grammar is _DAY_OF_WEEK and 7 in values:
        values = (values - {7}) | {0}
    return values


def _value(text: str, grammar: _Grammar, item: str) -> int:
    """One number or name of a field, checked against the field's range."""
    lowered = text.lower()
    if lowered in grammar.names:
        return grammar.names[lowered]
    if not text:
        raise _FieldError(
            f'{grammar.name} "{item}": a range needs a value on each side of "-", e.g. "1-5"'
        )
    if not _NUMBER.fullmatch(text):
        raise _FieldError(
            f'{grammar.name} "{text}"{_within(text, item)} is not a {grammar.noun}; '
            f"{grammar.accepted}"
        )
    number = int(text)
    if not grammar.low <= number <= grammar.high:
        sunday = " (0 and 7 are Sunday)" if grammar is _DAY_OF_WEEK else ""
        raise _FieldError(
            f'{grammar.name} "{text}"{_within(text, item)} is out of range '
            f"{grammar.low}-{grammar.high}{sunday}"
        )
    return number


def _within(text: str, item: str) -> str:
    """Where a value sits, for a message: nothing when it is the whole item."""
    return "" if text == item else f' in "{item}"'


def _step(text: str, item: str, grammar: _Grammar) -> int:
    # A step longer than the field repeats nothing: "*/90" in the minute field would fire
    # at :00 only, which is never what "every 90 minutes" meant.
    longest = _top(grammar) - grammar.low + 1
    if not _NUMBER.fullmatch(text):
        raise _FieldError(
            f'{grammar.name} step "{text}" in "{item}" is not a whole number; use 1-{longest}'
        )
    if not 1 <= int(text) <= longest:
        raise _FieldError(f'{grammar.name} step "{text}" in "{item}" is out of range 1-{longest}')
    return int(text)


def _top(grammar: _Grammar) -> int:
    """The highest value ``*`` and ``start/step`` run to: 6 for the week, where 7 is 0 again."""
    return 6 if grammar is _DAY_OF_WEEK else grammar.high


def _reversed(
    item: str, first: str, last: str, low: int, high: int, grammar: _Grammar, stepped: bool
) -> str:
    message = (
        f'{grammar.name} range "{item}" is reversed: {first} comes after {last}; '
        "write the lower value first"
    )
    if stepped:
        return message
    top = _top(grammar)
    upper = f"{low}-{top}" if low < top else f"{low}"
    lower = f"{grammar.low}-{high}" if high > grammar.low else f"{grammar.low}"
    return f'{message}, or list both ends to wrap around: "{upper},{lower}"'


def _day_rule(month_day: str, weekday: str) -> DayRule:
    days, last_day, nearest = _month_day_values(month_day)
    weekdays, nth, last_weekdays = _weekday_values(weekday)
    return DayRule(
        month_days=frozenset(days),
        last_day=last_day,
        nearest_weekdays=frozenset(nearest),
        weekdays=frozenset(weekdays),
        nth_weekdays=frozenset(nth),
        last_weekdays=frozenset(last_weekdays),
        month_days_star=month_day.startswith(("*", "?")),
        weekdays_star=weekday.startswith(("*", "?")),
    )


def _alone(text: str, grammar: _Grammar) -> bool:
    """Whether the field is ``?`` (any day); refuse ``?`` mixed with other items."""
    if text == "?":
        return True
    if "?" in text:
        raise _FieldError(f'{grammar.name} "{text}": ? stands alone, for any day')
    return False


def _month_day_values(text: str) -> tuple[set[int], bool, set[int]]:
    """Day-of-month numbers, whether ``L`` is there, and the days of ``15W`` items."""
    grammar = _DAY_OF_MONTH
    if _alone(text, grammar):
        return set(range(1, 32)), False, set()
    days: set[int] = set()
    last_day = False
    nearest: set[int] = set()
    for item in _items(text, grammar):
        lowered = item.lower()
        if lowered == "l":
            last_day = True
        elif match := _NEAREST_WEEKDAY.fullmatch(lowered):
            nearest.add(_value(match.group(1), grammar, item))
        elif ("l" in lowered or "w" in lowered) and ("-" in lowered or "/" in lowered):
            raise _FieldError(
                f'{grammar.name} "{item}": L and W take no range or step; write L alone '
                "(the last day of the month) or a day and W, e.g. 15W"
            )
        else:
            days |= _range_values(item, grammar)
    return days, last_day, nearest


def _weekday_values(text: str) -> tuple[set[int], set[tuple[int, int]], set[int]]:
    """Weekdays (Sunday 0), ``mon#2`` pairs (weekday, week) and ``L5`` weekdays."""
    grammar = _DAY_OF_WEEK
    if _alone(text, grammar):
        return set(range(7)), set(), set()
    weekdays: set[int] = set()
    nth: set[tuple[int, int]] = set()
    last: set[int] = set()
    for item in _items(text, grammar):
        lowered = item.lower()
        if match := _NTH_WEEKDAY.fullmatch(lowered):
            day_text, week_text = match.groups()
            if not _NUMBER.fullmatch(week_text):
                raise _FieldError(
                    f'{grammar.name} "{item}": week "{week_text}" is not a number; use 1-5'
                )
            if not 1 <= int(week_text) <= 5:
                raise _FieldError(
                    f'{grammar.name} "{item}": week "{week_text}" is out of range 1-5'
                )
            nth.add((_single_weekday(item[: len(day_text)], item), int(week_text)))
        elif lowered.startswith("l"):
            last.add(_single_weekday(item[1:], item))
        else:
            weekdays |= _range_values(item, grammar)
    return weekdays, nth, last


def _single_weekday(text: str, item: str) -> int:
    """The one weekday of a ``mon#2`` or ``L5`` item (Sunday as 0)."""
    if not text or "-" in text or "/" in text or "*" in text:
        raise _FieldError(
            f'day-of-week "{item}": # and L take one day, e.g. mon#2 (the second Monday) or '
            "L5 (the last Friday); list several items for several days"
        )
    return _value(text, _DAY_OF_WEEK, item) % 7


def _occurs(fields: CronFields) -> bool:
    """Whether the day rule matches any day of the expression's months, ever."""
    return any(
        fields.days.days_of(year, month)
        for year in range(_SEARCH_FROM, _SEARCH_FROM + SEARCH_YEARS)
        for month in fields.months
    )

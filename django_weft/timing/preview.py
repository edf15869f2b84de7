"""The preview: what every enabled schedule will fire over a period, without firing it.

Pure: it plans the rows it is handed (anything shaped like :class:`PlannedRow`; a
stored ``Schedule`` is one) and never reads the database or the clock. Reading the
stored schedules is :mod:`django_weft.engine.schedules.previews`.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import NamedTuple, Protocol

from django_weft.timing.cron import CronError, CronPlan, Fire, zone_from_name
from django_weft.timing.plans import Plan
from django_weft.timing.wording import clock_change_note, dst_note

_DURATION = re.compile(r"([0-9]+)([wdhms])")
_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
_SECONDS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}


@dataclass(frozen=True)
class Period:
    """How long a preview looks ahead, and the same in words ("1 day 12 hours")."""

    length: timedelta
    words: str

    @classmethod
    def of(cls, length: timedelta) -> Period:
        """A period given as a timedelta, said in days, hours, minutes and seconds."""
        if length <= timedelta(0):
            raise ValueError(f"a preview period must be positive, not {length}")
        left = int(length.total_seconds())
        parts = []
        for unit, seconds in _SECONDS.items():
            amount, left = divmod(left, seconds)
            if amount:
                parts.append(_amount(amount, unit))
        return cls(length, " ".join(parts) or str(length))  # under a second: as Python says it


def parse_period(text: str) -> Period:
    """``36h``, ``7d``, ``1d12h``, ``90m``, ``2w`` as a Period; ValueError otherwise.

    The words keep the units given: ``36h`` is "36 hours", ``1d12h`` "1 day 12 hours".
    """
    cleaned = text.strip().lower()
    if not cleaned or _DURATION.sub("", cleaned):
        raise ValueError(
            f'"{text}" is not a duration; use a number and a unit, e.g. 36h, 7d, 1d12h'
        )
    amounts: dict[str, int] = {}
    for amount, unit in _DURATION.findall(cleaned):
        amounts[_UNITS[unit]] = amounts.get(_UNITS[unit], 0) + int(amount)
    length = timedelta(**amounts)
    if length <= timedelta(0):
        raise ValueError(f'"{text}" is not a positive duration')
    words = " ".join(_amount(amount, unit) for unit, amount in amounts.items() if amount)
    return Period(length, words)


def _amount(amount: int, unit: str) -> str:
    return f"{amount} {unit if amount != 1 else unit[:-1]}"


class PlannedRow(Protocol):
    """What the preview reads of a schedule: its name, its plan and how to plan it.

    A stored ``Schedule`` is one; so is any object with these attributes and methods,
    which lets the preview plan rows that were never saved.
    """

    @property
    def name(self) -> str: ...

    @property
    def cron(self) -> str: ...

    @property
    def timezone(self) -> str: ...

    @property
    def at(self) -> datetime | None: ...

    @property
    def on_gap(self) -> str: ...

    @property
    def on_fold(self) -> str: ...

    def timezone_name(self) -> str:
        """The zone the row is planned in ("UTC" when it names none)."""
        ...

    def plan(self, origin: datetime) -> Plan:
        """The row's plan; ``origin`` anchors an interval that is not armed yet."""
        ...

    def first_due(self, now: datetime) -> datetime | None:
        """The slot the row, armed at ``now``, waits for; None for a one-off that is done."""
        ...


#: The notes of lines that are listed but do not fire.
_NOT_FIRES = ("skipped", "error")


class PreviewLine(NamedTuple):
    """One line of the preview: a fire (or a row that cannot be planned) of one schedule."""

    due: datetime
    schedule: str
    zone: str
    note: str
    mark: str
    #: The due on the wall clock of ``zone``, as printed: "2026-03-08 03:00 EDT".
    local: str

    @property
    def fires(self) -> bool:
        """Whether this line is a fire: not a DST-skipped slot, not an unplannable row."""
        return self.note not in _NOT_FIRES

    def render(self) -> str:
        """``2026-03-08 07:00 UTC  2026-03-08 03:00 EDT (America/Toronto)  name  [mark]``."""
        return (
            f"{_to_minutes(self.due)} UTC  {self.local} ({self.zone})  "
            f"{self.schedule}{f'  [{self.mark}]' if self.mark else ''}"
        )


def preview(
    since: datetime, period: timedelta, schedules: Iterable[PlannedRow]
) -> list[PreviewLine]:
    """Every fire in ``(since, since + period]`` in time order; DST-moved ones are marked,
    and so is each cron schedule's first fire on a day its zone's clocks change.

    An armed interval keeps its grid; a one-off that is overdue and has not run is
    shown at ``since``, when a worker started then would fire it. Schedules that share
    a cron, a zone and the DST policies are planned once.
    """
    if since.utcoffset() is None:
        raise ValueError(f"since must be a timezone-aware datetime, got {since!r}")
    since = since.astimezone(UTC)  # every line is rendered "... UTC"
    until = since + period
    # (fire, mark, local) of each cron plan, shared by the rows that have that plan.
    planned: dict[tuple[str, str, str, str], list[tuple[Fire, str, str]]] = {}
    lines: list[PreviewLine] = []
    for row in schedules:
        zone = row.timezone_name()
        if row.at is not None:
            due = row.first_due(since)
            if due is not None and due <= until:
                due = due.astimezone(UTC)
                overdue = due <= since
                mark = f"overdue since {due:%Y-%m-%d %H:%M} UTC" if overdue else ""
                shown = max(due, since)
                lines.append(PreviewLine(shown, row.name, zone, "", mark, _local(shown, zone)))
            continue
        try:
            if row.cron:
                key = (row.cron, row.timezone, row.on_gap, row.on_fold)
                if key not in planned:
                    plan = row.plan(since)
                    assert isinstance(plan, CronPlan)  # a row with a cron has a cron plan
                    planned[key] = _cron_slots(plan, since, until)
                slots = planned[key]
            else:
                fires = row.plan(since).fires(since, until)
                slots = [(fire, "", _local(fire.due, zone)) for fire in fires]
        except CronError as error:
            mark = f"cannot be planned: {error}"
            lines.append(PreviewLine(since, row.name, zone, "error", mark, _local(since, zone)))
            continue
        lines.extend(
            PreviewLine(fire.due, row.name, zone, fire.note, mark, local)
            for fire, mark, local in slots
        )
    # Two stable sorts, by name and then by due, are several times quicker than one by
    # (due, name): tuples of aware datetimes compare slowly.
    lines.sort(key=operator.attrgetter("schedule"))
    lines.sort(key=operator.attrgetter("due"))
    return lines


def _cron_slots(plan: CronPlan, since: datetime, until: datetime) -> list[tuple[Fire, str, str]]:
    """A cron plan's fires and skipped slots, each with its DST mark and wall-clock time."""
    return list(_marked(plan, plan.fires(since, until, include_skipped=True)))


def _marked(plan: CronPlan, fires: Iterable[Fire]) -> Iterator[tuple[Fire, str, str]]:
    """Each fire with its wall-clock time and its mark: what a daylight-saving change did
    to it, or, for the first fire of a day of a clock change that the change left alone,
    that the clocks change that day (an hourly plan's day is marked once, not 24 times)."""
    marked_day: date | None = None
    for fire in fires:
        if fire.note in ("", "repeated"):
            # The wall time that matched is the wall-clock time of the fire: no conversion.
            reading = fire.wall.replace(tzinfo=plan.zone, fold=fire.note == "repeated")
            local = f"{fire.wall.isoformat(' ', 'minutes')} {reading.tzname()}"
        else:
            local = _local(fire.due, plan.zone.key)
        mark = dst_note(fire)
        day = fire.due.astimezone(plan.zone).date()
        if not mark and day != marked_day:
            mark = clock_change_note(fire.due, plan.zone)
        if mark:
            marked_day = day
        yield fire, mark, local


#: Later than any slot a plan can name: "as far as the plan goes".
_END_OF_TIME = datetime.max.replace(tzinfo=UTC)


def upcoming(row: PlannedRow, since: datetime, count: int) -> list[PreviewLine]:
    """The next ``count`` fires of one schedule after ``since``, as the preview lines them.

    The admin's "next fires": DST-skipped slots among them are listed too (they do not
    count), an overdue one-off shows at ``since``. Raises CronError for a row that cannot
    be planned.
    """
    since = since.astimezone(UTC)
    zone = row.timezone_name()
    if row.at is not None:
        return preview(since, _END_OF_TIME - since, [row])
    lines: list[PreviewLine] = []
    fires = 0
    try:
        plan = row.plan(since)
        slots: Iterable[tuple[Fire, str, str]]
        if isinstance(plan, CronPlan):
            slots = _marked(plan, plan.fires(since, _END_OF_TIME, include_skipped=True))
        else:
            slots = ((fire, "", _local(fire.due, zone)) for fire in plan.fires(since, _END_OF_TIME))
        for fire, mark, local in slots:
            line = PreviewLine(fire.due, row.name, zone, fire.note, mark, local)
            lines.append(line)
            fires += line.fires
            if fires >= count:
                break
    except OverflowError:  # an interval that steps past year 9999
        pass
    return lines


def _local(moment: datetime, zone: str) -> str:
    """``moment`` on the wall clock of ``zone``, as printed; in UTC if the zone is unknown."""
    try:
        tz: tzinfo = zone_from_name(zone)
    except CronError:
        tz = UTC  # a stored row whose zone is unknown (written around save())
    local = moment.astimezone(tz)
    return f"{_to_minutes(local)} {local.tzname()}"


def _to_minutes(moment: datetime) -> str:
    """``2026-03-08 07:00``: the wall-clock reading (several times quicker than strftime)."""
    return moment.replace(tzinfo=None).isoformat(" ", "minutes")


def header(
    lines: list[PreviewLine], since: datetime, period: Period, disabled: Collection[str] = ()
) -> str:
    """The line above a printed preview: how many fires, over what period, from when.

    ``disabled`` names schedules that were asked for but fire nothing, being disabled.
    """
    notes = Counter(line.note for line in lines)
    skipped = notes["skipped"]
    fires = len(lines) - sum(notes[note] for note in _NOT_FIRES)
    remarks = []
    if skipped:
        remarks.append(f"{skipped} DST-skipped slot{'' if skipped == 1 else 's'} listed")
    if disabled:
        remarks.append(f"disabled, so not listed: {', '.join(sorted(disabled))}")
    return (
        f"# {fires} fire{'' if fires == 1 else 's'} over {period.words} "
        f"from {since.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
        + (f" ({'; '.join(remarks)})" if remarks else "")
    )

"""The preview: what every enabled schedule will fire over a period, without firing it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django_weft.cron import CronError, zone_from_name
from django_weft.models import Schedule

_DURATION = re.compile(r"(\d+)([wdhms])")
_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}

_MARKS = {
    "shifted": "DST gap: {wall} does not exist, moved to the end of the gap",
    "skipped": "DST gap: {wall} does not exist, skipped",
    "repeated": "DST fold: {wall} happens twice, second run",
}


def parse_duration(text: str) -> timedelta:
    """``36h``, ``7d``, ``1d12h``, ``90m``, ``2w`` as a timedelta; ValueError otherwise."""
    cleaned = text.strip().lower()
    if not cleaned or _DURATION.sub("", cleaned):
        raise ValueError(
            f'"{text}" is not a duration; use a number and a unit, e.g. 36h, 7d, 1d12h'
        )
    total = timedelta()
    for amount, unit in _DURATION.findall(cleaned):
        total += timedelta(**{_UNITS[unit]: int(amount)})
    if total <= timedelta(0):
        raise ValueError(f'"{text}" is not a positive duration')
    return total


@dataclass(frozen=True)
class PreviewLine:
    due: datetime
    schedule: str
    zone: str
    note: str
    mark: str

    @property
    def fires(self) -> bool:
        """Whether this line is a fire: not a DST-skipped slot, not an unplannable row."""
        return self.note not in ("skipped", "error")

    def render(self) -> str:
        try:
            local = f"{self.due.astimezone(zone_from_name(self.zone)):%Y-%m-%d %H:%M %Z}"
        except CronError:
            # A stored row whose zone is unknown (written around save()): show UTC.
            local = f"{self.due.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
        return (
            f"{self.due:%Y-%m-%d %H:%M} UTC  {local} ({self.zone})  "
            f"{self.schedule}{f'  [{self.mark}]' if self.mark else ''}"
        )


def preview(since: datetime, period: timedelta, schedules: Iterable[Schedule]) -> list[PreviewLine]:
    """Every fire in ``(since, since + period]`` in time order; DST-moved ones are marked.

    An armed interval keeps its grid; a one-off that is overdue and has not run is
    shown at ``since``, when a worker started then would fire it.
    """
    if since.utcoffset() is None:
        raise ValueError(f"since must be a timezone-aware datetime, got {since!r}")
    since = since.astimezone(UTC)  # every line is rendered "... UTC"
    until = since + period
    lines: list[PreviewLine] = []
    for row in schedules:
        zone = row.timezone_name()
        if row.at is not None:
            due = row.first_due(since)
            if due is not None and due <= until:
                due = due.astimezone(UTC)
                overdue = due <= since
                mark = f"overdue since {due:%Y-%m-%d %H:%M} UTC" if overdue else ""
                lines.append(PreviewLine(max(due, since), row.name, zone, "", mark))
            continue
        try:
            fires = list(row.plan(since).fires(since, until, include_skipped=True))
        except CronError as error:
            lines.append(PreviewLine(since, row.name, zone, "error", f"cannot be planned: {error}"))
            continue
        for fire in fires:
            mark = _MARKS[fire.note].format(wall=f"{fire.wall:%H:%M}") if fire.note else ""
            lines.append(PreviewLine(fire.due, row.name, zone, fire.note, mark))
    return sorted(lines, key=lambda line: (line.due, line.schedule))


def enabled_schedules() -> list[Schedule]:
    return list(Schedule.objects.filter(enabled=True).order_by("name"))

"""Times, durations and JSON as the console prints them: to the second, with the zone.

Pure functions of their inputs; the moment "now" of a running run's duration is handed
in, never read here.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, tzinfo
from typing import Any


def moment(value: datetime | None, zone: tzinfo) -> str:
    """``2026-12-01 10:55:03 UTC``: ``value`` on the wall clock of ``zone``, "-" for None."""
    if value is None:
        return "-"
    local = value.astimezone(zone)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"


def zone_name(zone: tzinfo) -> str:
    """The IANA name of ``zone`` (``Europe/Paris``), as schedules name theirs; ``UTC`` for
    the fixed zone of that name."""
    return str(getattr(zone, "key", zone))


def duration(length: timedelta | None) -> str:
    """A run's length in the unit an operator reads at a glance: ``0.42 s``, ``3 min 05 s``."""
    if length is None:
        return "-"
    seconds = max(length.total_seconds(), 0.0)
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    minutes, second = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {second:02d} s"
    hours, minute = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minute:02d} min"
    days, hour = divmod(hours, 24)
    return f"{days} d {hour:02d} h"


def run_length(
    started: datetime | None, finished: datetime | None, now: datetime
) -> timedelta | None:
    """How long a run ran: to its finish, or to ``now`` while it runs; None before it starts."""
    if started is None:
        return None
    return (finished or now) - started


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON, non-ASCII kept as it is."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def short_id(value: object) -> str:
    """The first eight characters of a run's UUID: enough to tell runs apart on a screen."""
    return str(value)[:8]

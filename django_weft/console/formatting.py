"""Times, durations and JSON as the console prints them: to the second, with the zone.

Pure functions of their inputs; the moment "now" of a running run's duration is handed
in, never read here.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, tzinfo
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString


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


def length_html(started: datetime | None, finished: datetime | None, now: datetime) -> SafeString:
    """:func:`duration` of :func:`run_length`, as HTML: while the run (or attempt) runs,
    a span holding the seconds it had run at ``now``, the server's clock, which the
    console's script moves on each second (``data-weft-elapsed``), so the figure ticks
    from the server's clock however far the browser's is from it."""
    length = run_length(started, finished, now)
    if length is None or finished is not None:
        return format_html("{}", duration(length))
    return format_html(
        '<span class="weft-ticking" data-weft-elapsed="{}">{}</span>',
        f"{max(length.total_seconds(), 0.0):.3f}",
        duration(length),
    )


def relative(seconds: float) -> str:
    """A moment ``seconds`` from now in words: ``in 42 min 05 s``, ``3 min 05 s ago``,
    ``now`` within the second; whole seconds under a minute."""
    span = abs(seconds)
    if span < 1:
        return "now"
    words = f"{int(span)} s" if span < 60 else duration(timedelta(seconds=span))
    return f"in {words}" if seconds > 0 else f"{words} ago"


def relative_html(value: datetime | None, now: datetime) -> SafeString:
    """:func:`relative` of ``value`` at ``now`` (the server's clock), as a span the
    console's script moves on each second (``data-weft-offset``), as it does lengths."""
    if value is None:
        return format_html("{}", "")
    seconds = (value - now).total_seconds()
    return format_html(
        '<span class="weft-relative" data-weft-offset="{}">{}</span>',
        f"{seconds:.3f}",
        relative(seconds),
    )


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON, non-ASCII kept as it is."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def short_id(value: object) -> str:
    """The first eight characters of a run's UUID: enough to tell runs apart on a screen."""
    return str(value)[:8]


def unbroken_dates(text: str) -> SafeString:
    """``text`` escaped, each word that holds a hyphen (a date: ``2026-12-06``) kept on
    one line: a browser may break a line after a hyphen, and a list's lines break at
    spaces only."""
    return format_html_join(
        " ",
        "{}",
        (
            (format_html("<span class='nowrap'>{}</span>", word) if "-" in word else word,)
            for word in text.split(" ")
        ),
    )

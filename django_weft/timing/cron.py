"""Five-field cron expressions evaluated on the wall clock of an IANA time zone.

This module is pure timing logic: it never reads the clock and never touches Django or
the database; every moment is passed in. :mod:`django_weft.timing.cronfields` reads the
expression and lists the wall times it matches, in order; this module maps each wall
time to real instants with :mod:`zoneinfo` under an explicit daylight-saving policy.

Daylight-saving policies:

* ``on_gap`` -- a wall time that does not exist (spring forward, or a skipped day).
  ``"shift"`` fires at the first instant after the gap, as Debian's cron does;
  ``"skip"`` drops the slot.
* ``on_fold`` -- a wall time that happens twice (fall back, or a repeated day).
  ``"first"`` fires at the first occurrence only; ``"both"`` fires at both.

A schedule whose hour field is ``*`` or a step (any hour field with a ``/``: ``*/2``,
``0-23/2``, ``1-23/2``...) means "every so many real hours" and keeps that real-time
rhythm through both changes, whatever the policies say: through a fold it behaves as
``on_fold="both"`` (the repeated hour runs too), and in a gap its missing wall times
are skipped, as Debian's cron does for wildcard-hour jobs (they simply continue on the
new time). ``30 * * * *`` in Toronto on a spring-forward day fires at 01:30 EST and
then 03:30 EDT, one real hour apart.

Slots that land on the same instant fire once. A skipped slot is reported (on request)
at its would-be instant, unless a real fire has that instant.

Nothing here assumes a size for a wall-clock jump: the tz database holds gaps and folds
of a whole day (Pacific/Apia skipped 2011-12-30; Alaska repeated a day in 1867), and
they follow the same policies as an hour's change.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import NamedTuple
from zoneinfo import ZoneInfo, available_timezones

from django_weft.timing.cronfields import CronError, CronFields, parse

GAP_POLICIES = ("shift", "skip")
FOLD_POLICIES = ("first", "both")

#: A UTC offset is strictly between -24 and +24 hours (a Python rule, wider than any
#: zone's), so no wall time earlier than an instant minus a day maps past that instant.
_OFFSET_BOUND = timedelta(hours=24)
# On equal dues the first of these wins: an ordinary fire beats a shifted one.
_NOTE_RANK = {"": 0, "repeated": 1, "shifted": 2, "skipped": 3}


@functools.cache
def _zone_names() -> frozenset[str]:
    # Scanning the tz database is slow, so do it once per process.
    return frozenset(available_timezones())


def zone_from_name(name: str) -> ZoneInfo:
    """Return the ZoneInfo for an IANA name, or raise CronError(field="timezone")."""
    if name not in _zone_names():
        raise CronError(
            f'unknown time zone "{name}"; use an IANA name such as "Europe/Berlin"',
            field="timezone",
        )
    return ZoneInfo(name)


class Fire(NamedTuple):
    """One slot of a plan: when it fires (``due``, aware UTC) and what wall time matched.

    ``note`` is "" (ordinary), "shifted" (wall time in a gap, moved to the end of the
    gap), "skipped" (wall time in a gap, dropped; never fires, only reported on
    request, with ``due`` the would-be fold=0 instant) or "repeated" (second
    occurrence of a wall time that happens twice). A named tuple, because a preview
    makes one per slot of every schedule and a tuple is the quickest to make.
    """

    due: datetime
    wall: datetime
    note: str = ""


class CronPlan:
    """A validated five-field cron expression bound to a time zone and DST policies."""

    def __init__(
        self, expression: str, zone: str, *, on_gap: str = "shift", on_fold: str = "first"
    ) -> None:
        """Validate every input, raising CronError whose ``field`` names the bad one."""
        self.fields: CronFields = parse(expression)
        self.zone = zone_from_name(zone)
        if on_gap not in GAP_POLICIES:
            raise CronError(f'unknown on_gap "{on_gap}"; use "shift" or "skip"', field="on_gap")
        if on_fold not in FOLD_POLICIES:
            raise CronError(f'unknown on_fold "{on_fold}"; use "first" or "both"', field="on_fold")
        self.expression = expression
        self.on_gap = on_gap
        self.on_fold = on_fold
        # An hour field like "*", "*/2" or "0-23/2" means "every so many real hours":
        # the repeated hour of a fold runs too and the missing wall times of a gap
        # are skipped, whatever on_fold and on_gap say.
        self._fold_both = on_fold == "both" or self.fields.real_time_hours
        self._gap_skip = on_gap == "skip" or self.fields.real_time_hours

    def __repr__(self) -> str:
        return (
            f"CronPlan({self.expression!r}, {self.zone.key!r}, "
            f"on_gap={self.on_gap!r}, on_fold={self.on_fold!r})"
        )

    def next_fire(self, after: datetime) -> Fire:
        """Return the first firing Fire whose due is strictly after ``after`` (aware)."""
        for fire in self._candidates(after):
            if fire.note != "skipped":
                return fire
        # Only reachable at the end of the datetime range (year 9999).
        raise CronError(
            f'cron "{self.expression}" has no fire after {after.isoformat()}', field="cron"
        )

    def fires(
        self, after: datetime, until: datetime, *, include_skipped: bool = False
    ) -> Iterator[Fire]:
        """Yield every firing Fire with after < due <= until, in due order.

        With ``include_skipped`` the dropped gap slots (on_gap="skip", or an hour
        field that is ``*`` or a step) are reported too (note "skipped"), at their
        would-be due; one whose would-be due is the due of a real fire is not.
        """
        _require_aware(until, "until")
        for fire in self._candidates(after, include_skipped=include_skipped):
            if fire.due > until:
                return
            if include_skipped or fire.note != "skipped":
                yield fire

    def _candidates(self, after: datetime, *, include_skipped: bool = False) -> Iterator[Fire]:
        """The slots due after ``after``, skipped ones included: sorted, one per instant.

        Matched wall times come in wall-clock order; their slots come almost in due
        order, except where a change of offset makes a later wall time fire earlier
        (the repeated half of a fold, the would-be instants of skipped gap slots). So
        slots wait in a heap until a wall time's earliest instant (its horizon) shows
        that no later wall time can fire before them. Without ``include_skipped`` the
        skipped slots of wall times before ``after``'s own may be missing: each would
        lose to a real fire at its instant anyway.
        """
        _require_aware(after, "after")
        after = after.astimezone(UTC)
        start = self._earliest_wall(after, include_skipped=include_skipped)
        # (due, note rank, arrival order, fire): ties go to the better note, then
        # to the earlier wall; the Fire itself is never compared.
        pending: list[tuple[datetime, int, int, Fire]] = []
        arrivals = itertools.count()
        last_due: datetime | None = None
        push, pop = heapq.heappush, heapq.heappop  # looked up once: this loop is the hot path
        for wall in self.fields.walls_from(start):
            try:
                slots, horizon = self._slots(wall)
            except OverflowError:
                if wall.year == datetime.min.year:
                    continue  # an instant before year 1 is before `after` too
                break  # past year 9999: what is pending is all there is
            while pending and pending[0][0] < horizon:
                fire = pop(pending)[3]
                if fire.due != last_due:  # equal dues: the best-ranked one came first
                    last_due = fire.due
                    yield fire
            for fire in slots:
                if fire.due > after:
                    push(pending, (fire.due, _NOTE_RANK[fire.note], next(arrivals), fire))
        while pending:
            fire = pop(pending)[3]
            if fire.due != last_due:
                last_due = fire.due
                yield fire

    def _earliest_wall(self, after: datetime, *, include_skipped: bool) -> datetime:
        """A wall time before which no wall time has a slot (of the kind asked for) after ``after``.

        A fire of an earlier wall time lies after ``after`` only through the repeated half
        of a fold that ``after`` is in: start that many hours back. A skipped slot's
        would-be instant uses the offset from before its gap, which can reach past
        ``after`` from further back; no offset reaches a day, so start a day back.
        """
        naive_after = after.replace(tzinfo=None)
        if include_skipped:
            if naive_after - datetime.min <= _OFFSET_BOUND:
                return datetime.min
            return naive_after - _OFFSET_BOUND
        try:
            local = after.astimezone(self.zone).replace(tzinfo=None, fold=0)
        except OverflowError:  # the wall clock at `after` is before year 1 or after 9999
            return datetime.min if naive_after.year == datetime.min.year else datetime.max
        first_offset, second_offset = self._offsets(local)
        # In a fold the first reading has the larger offset; their difference is the fold.
        return local - max(first_offset - second_offset, timedelta(0))

    def _offsets(self, wall: datetime) -> tuple[timedelta, timedelta]:
        """The UTC offsets of a naive wall time read with fold=0 and with fold=1."""
        # ZoneInfo reads only the wall-clock fields and the fold of what it is given, so
        # the naive wall time goes in as it is (three times quicker than attaching it).
        first = self.zone.utcoffset(wall)
        second = self.zone.utcoffset(wall.replace(fold=1))
        assert first is not None  # a ZoneInfo always has an offset
        assert second is not None
        return first, second

    def _slots(self, wall: datetime) -> tuple[tuple[Fire, ...], datetime]:
        """The fires of one matched wall time under this plan's DST policies, and its horizon.

        The horizon is the earlier of the wall's two readings (fold=0 and fold=1): no
        slot of this or any later wall time is due before it. Between two changes of
        offset that is plain; at a change, every slot of a later wall time lies at or
        after the change, and both readings of this one lie at or before it.
        """
        first_offset, second_offset = self._offsets(wall)
        first = (wall - first_offset).replace(tzinfo=UTC)
        if first_offset == second_offset:
            return (Fire(first, wall),), first
        second = (wall - second_offset).replace(tzinfo=UTC)
        if first < second:  # fold: the wall time happens twice
            if self._fold_both:
                return (Fire(first, wall), Fire(second, wall, "repeated")), first
            return (Fire(first, wall),), first
        # Gap: for a missing wall time fold=1 reads it with the offset after the
        # change (an instant before it) and fold=0 with the offset before (an
        # instant after it), so the change lies in (second, first].
        if self._gap_skip:
            return (Fire(first, wall, "skipped"),), second
        return (Fire(self._transition(second, first), wall, "shifted"),), second

    def _transition(self, before: datetime, after: datetime) -> datetime:
        """The first instant in (before, after] carrying ``after``'s UTC offset."""
        # Bisect on whole seconds: works for any shift, 30 minutes (Lord Howe) or a day.
        target = after.astimezone(self.zone).utcoffset()
        low, high = int(before.timestamp()), int(after.timestamp())
        while high - low > 1:
            middle = (low + high) // 2
            if datetime.fromtimestamp(middle, self.zone).utcoffset() == target:
                high = middle
            else:
                low = middle
        return datetime.fromtimestamp(high, UTC)


def _require_aware(moment: datetime, name: str) -> None:
    # A naive moment has no defined instant; guessing a zone would hide bugs.
    if moment.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {moment!r}")


__all__ = [
    "FOLD_POLICIES",
    "GAP_POLICIES",
    "CronError",
    "CronPlan",
    "Fire",
    "zone_from_name",
]

"""Five-field cron expressions evaluated on the wall clock of an IANA time zone.

This module is pure timing logic: it never reads the clock and never touches
Django or the database; every moment is passed in. croniter parses the
expression and iterates the *naive* wall-clock times it matches; this module
then maps each wall time to real instants under an explicit daylight-saving
policy. (Given aware datetimes, croniter would fire a repeated 01:30 twice and
handle gaps its own way, so the policy is applied here instead.)

Daylight-saving policies:

* ``on_gap`` -- a wall time that does not exist (spring forward).
  ``"shift"`` fires at the first instant after the gap, as Debian's cron does;
  ``"skip"`` drops the slot.
* ``on_fold`` -- a wall time that happens twice (fall back). ``"first"`` fires
  at the first occurrence only; ``"both"`` fires at both.

A schedule whose hour field is ``*`` or a step (any hour field with a ``/``:
``*/2``, ``0-23/2``, ``1-23/2``...) means "every so many real hours" and keeps
that real-time rhythm through both changes, whatever the policies say: through
a fold it behaves as ``on_fold="both"`` (the repeated hour runs too), and in a
gap its missing wall times are skipped, as Debian's cron does for wildcard-hour
jobs (they simply continue on the new time). ``30 * * * *`` in Toronto on a
spring-forward day fires at 01:30 EST and then 03:30 EDT, one real hour apart.

Slots that land on the same instant fire once. A skipped slot is reported (on
request) at its would-be instant, unless a real fire has that instant.

croniter's random (``R``) and hashed (``H``) values are refused: ``R`` would be
drawn again at every evaluation, so the armed slot, the preview and the next
fire would disagree.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

from croniter import CroniterBadDateError, CroniterError, croniter  # type: ignore[import-untyped,unused-ignore]

GAP_POLICIES = ("shift", "skip")
FOLD_POLICIES = ("first", "both")

# The Gregorian calendar (weekdays included) repeats every 400 years, so an
# expression that matches nothing in 400 years never matches at all.
SEARCH_YEARS = 400
_REFERENCE_WALL = datetime(2000, 1, 1)
# Real DST shifts are at most two hours; with this margin a later wall time can
# never map to an instant earlier than what has already been released.
_LOOKAHEAD = timedelta(hours=3)
# On equal dues the first of these wins: an ordinary fire beats a shifted one.
_NOTE_RANK = {"": 0, "repeated": 1, "shifted": 2, "skipped": 3}


class CronError(ValueError):
    """Raised for anything that makes a cron plan unusable; str(error) is a user-facing message."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field  # which input is wrong: "cron", "timezone", "on_gap" or "on_fold"

    def __reduce__(self) -> tuple[type[CronError], tuple[str, str]]:
        # Keep the field when the error is pickled (e.g. to another process).
        return (type(self), (str(self), self.field))


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


@dataclass(frozen=True)
class Fire:
    """One slot of a plan: when it fires (``due``, aware UTC) and what wall time matched.

    ``note`` is "" (ordinary), "shifted" (wall time in a gap, moved to the end
    of the gap), "skipped" (wall time in a gap, dropped; never fires, only
    reported on request, with ``due`` the would-be fold=0 instant) or
    "repeated" (second occurrence of a wall time that happens twice).
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
        fields = expression.split()
        if len(fields) != 5:
            raise CronError(
                f'invalid cron "{expression}": expected a five-field cron '
                "(minute hour day-of-month month day-of-week)",
                field="cron",
            )
        _refuse_random_and_hashed(expression, fields)
        try:
            first = croniter(
                expression, _REFERENCE_WALL, max_years_between_matches=SEARCH_YEARS
            ).get_next(datetime)
        except CroniterBadDateError:
            first = None
        except (CroniterError, ValueError) as error:
            raise CronError(
                f'invalid cron "{expression}": {error}; expected a five-field cron',
                field="cron",
            ) from error
        if first is None:
            raise CronError(f'cron "{expression}" never occurs', field="cron")
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
        self._real_time_hours = fields[1].startswith("*") or "/" in fields[1]
        self._fold_both = on_fold == "both" or self._real_time_hours
        self._gap_skip = on_gap == "skip" or self._real_time_hours

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
        for fire in self._candidates(after):
            if fire.due > until:
                return
            if include_skipped or fire.note != "skipped":
                yield fire

    def _candidates(self, after: datetime) -> Iterator[Fire]:
        """All slots (skipped ones included) due after ``after``: sorted, one per instant."""
        _require_aware(after, "after")
        start = after.astimezone(self.zone).replace(tzinfo=None) - _LOOKAHEAD
        walls = croniter(self.expression, start, max_years_between_matches=SEARCH_YEARS).all_next(
            datetime
        )
        # (due, note rank, arrival order, fire): ties go to the better note, then
        # to the earlier wall; the Fire itself is never compared.
        pending: list[tuple[datetime, int, int, Fire]] = []
        arrivals = itertools.count()
        last_due: datetime | None = None
        while True:
            try:
                wall: datetime = next(walls)
                slots = self._slots(wall)
                # Every later wall maps to an instant after `horizon`, so what
                # lies before it is final and can be released in order.
                horizon: datetime | None = self._instant(wall, 0) - _LOOKAHEAD
            except (StopIteration, ValueError, OverflowError):
                slots, horizon = [], None  # past year 9999: all that is pending is final
            for fire in slots:
                if fire.due > after:
                    heapq.heappush(pending, (fire.due, _NOTE_RANK[fire.note], next(arrivals), fire))
            while pending and (horizon is None or pending[0][0] < horizon):
                due, _, _, fire = heapq.heappop(pending)
                if due != last_due:  # equal dues: the best-ranked one came first
                    last_due = due
                    yield fire
            if horizon is None:
                return

    def _instant(self, wall: datetime, fold: int) -> datetime:
        return wall.replace(tzinfo=self.zone, fold=fold).astimezone(UTC)

    def _slots(self, wall: datetime) -> list[Fire]:
        """The fires of one matched wall time under this plan's DST policies."""
        first = self._instant(wall, 0)
        second = self._instant(wall, 1)
        if first == second:
            return [Fire(first, wall)]
        if first < second:  # fold: the wall time happens twice
            if self._fold_both:
                return [Fire(first, wall), Fire(second, wall, "repeated")]
            return [Fire(first, wall)]
        # Gap: for a missing wall time fold=1 reads it with the offset after the
        # transition (an instant before it) and fold=0 with the offset before
        # (an instant after it), so the transition lies in (second, first].
        if self._gap_skip:
            return [Fire(first, wall, "skipped")]
        return [Fire(self._transition(second, first), wall, "shifted")]

    def _transition(self, before: datetime, after: datetime) -> datetime:
        """The first instant in (before, after] carrying ``after``'s UTC offset."""
        # Bisect on whole seconds: works for any shift size (Lord Howe's 30 min too).
        target = after.astimezone(self.zone).utcoffset()
        low, high = int(before.timestamp()), int(after.timestamp())
        while high - low > 1:
            middle = (low + high) // 2
            if datetime.fromtimestamp(middle, self.zone).utcoffset() == target:
                high = middle
            else:
                low = middle
        return datetime.fromtimestamp(high, UTC)


def _refuse_random_and_hashed(expression: str, fields: list[str]) -> None:
    """Raise CronError(field="cron") if a field uses croniter's R (random) or H (hashed)."""
    for field in fields:
        for token in field.split(","):
            base = token.split("/", 1)[0].upper()  # "H/15" and "H(0-29)/5" are hashed too
            if base in ("R", "H") or base.startswith(("R(", "H(")):
                raise CronError(
                    f'invalid cron "{expression}": random (R) and hashed (H) values are '
                    "not supported; write the minute or hour out, e.g. 17 instead of H",
                    field="cron",
                )


def _require_aware(moment: datetime, name: str) -> None:
    # A naive moment has no defined instant; guessing a zone would hide bugs.
    if moment.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime, got {moment!r}")

"""The three kinds of plan a schedule can have, behind one small interface.

Pure functions of their inputs: nothing here reads the clock or the database. A plan
answers "what is the first slot strictly after this moment?" and lists the slots in a
period, with the daylight-saving notes the preview prints. Cron plans live in
:mod:`django_weft.timing.cron`; this module adds fixed intervals and one-off moments.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from django_weft.timing.cron import CronPlan, Fire


class Plan(Protocol):
    def next_fire(self, after: datetime) -> Fire | None: ...

    def fires(
        self, after: datetime, until: datetime, *, include_skipped: bool = False
    ) -> Iterator[Fire]: ...


@dataclass(frozen=True)
class EveryPlan:
    """Slots every ``interval`` on the grid through ``origin`` (the row's own grid)."""

    interval: timedelta
    origin: datetime

    def next_fire(self, after: datetime) -> Fire:
        if after < self.origin:
            return _utc_fire(self.origin)
        steps = (after - self.origin) // self.interval + 1
        return _utc_fire(self.origin + steps * self.interval)

    def fires(
        self, after: datetime, until: datetime, *, include_skipped: bool = False
    ) -> Iterator[Fire]:
        fire = self.next_fire(after)
        while fire.due <= until:
            yield fire
            fire = _utc_fire(fire.due + self.interval)


@dataclass(frozen=True)
class AtPlan:
    """One slot at ``at``."""

    at: datetime

    def next_fire(self, after: datetime) -> Fire | None:
        return _utc_fire(self.at) if self.at > after else None

    def fires(
        self, after: datetime, until: datetime, *, include_skipped: bool = False
    ) -> Iterator[Fire]:
        if after < self.at <= until:
            yield _utc_fire(self.at)


def _utc_fire(moment: datetime) -> Fire:
    due = moment.astimezone(UTC)
    return Fire(due=due, wall=due.replace(tzinfo=None), note="")


def slots_between(plan: Plan, first: datetime, until: datetime, limit: int) -> list[datetime]:
    """The firing slots from ``first`` (itself a slot) up to ``until``, at most ``limit``.

    Used to count and make up missed fires; the limit keeps a long outage of a
    one-second schedule from turning into a long loop.
    """
    slots = [first] if first <= until else []
    for fire in plan.fires(first, until):
        if len(slots) >= limit:
            break
        slots.append(fire.due)
    return slots


__all__ = ["AtPlan", "CronPlan", "EveryPlan", "Fire", "Plan", "slots_between"]

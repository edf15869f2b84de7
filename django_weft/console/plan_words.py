"""A schedule's plan, state and DST policy in the words the schedule pages show.

A cron plan is said by :func:`django_weft.timing.wording.describe` (the phrase ``runjobs
--plan`` users know); this module adds intervals, one-offs and the state of a row, so
the list and the page say the same thing.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django_weft.console import formatting
from django_weft.models import Schedule
from django_weft.models.schedule import OnFold, OnGap
from django_weft.timing import wording
from django_weft.timing.cron import CronError, CronPlan, zone_from_name
from django_weft.timing.preview import Period


def moment_words(moment: datetime, zone: str = "") -> str:
    """``2026-03-07 12:00:05 UTC``, and the zone's wall clock when one is named.

    To the second and no finer: microseconds are noise to an operator.
    """
    utc = formatting.moment(moment, UTC)
    if not zone or zone == "UTC":
        return utc
    try:
        local = formatting.moment(moment, zone_from_name(zone))
    except CronError:
        return utc
    return f"{utc} ({local}, {zone})"


def plan_words(schedule: Schedule) -> str:
    """When the row fires, in words: "07:00 every day, America/Toronto", "every 1 hour"."""
    if schedule.cron:
        try:
            return wording.describe(schedule.cron, schedule.timezone_name())
        except CronError:
            return f"{schedule.cron} ({schedule.timezone_name()}), which is not a valid cron"
    if schedule.every is not None:
        try:
            return f"every {Period.of(schedule.every).words}"
        except ValueError:
            return f"every {schedule.every}, which is not a positive interval"
    if schedule.at is not None:
        return f"once at {moment_words(schedule.at, schedule.timezone)}"
    return "no plan yet"


def state_words(schedule: Schedule) -> str:
    """Where the row stands with the scheduler.

    "paused" (disabled); "fired, done" (a one-off whose moment has had its run: it does
    not fire again unless its ``at`` moves past that start); "armed" (waiting for its
    next due); "never armed" (no scheduler has seen it yet); "to be re-armed" (its plan
    changed or it was resumed, and the scheduler has not looked at it since).
    """
    if not schedule.enabled:
        return "paused"
    if schedule.at is not None and schedule.first_due(schedule.at) is None:
        return "fired, done"
    if schedule.armed:
        return "armed"
    if schedule.last_started is None:
        return "never armed"
    return "to be re-armed"


def dst_policy_words(schedule: Schedule, now: datetime) -> str:
    """What the row does on daylight-saving days, or "" when its zone has none this year.

    From the row's ``on_gap`` and ``on_fold``, or the real-time rule of an hour field
    that is ``*`` or a step, which overrides them (see :mod:`django_weft.timing.cron`).
    """
    if not schedule.cron:
        return ""
    try:
        plan = CronPlan(
            schedule.cron, schedule.timezone, on_gap=schedule.on_gap, on_fold=schedule.on_fold
        )
    except CronError:
        return ""
    winter, summer = (
        datetime(now.year, month, 1, tzinfo=plan.zone).utcoffset() for month in (1, 7)
    )
    if winter == summer:
        return ""
    if plan.fields.real_time_hours:
        return (
            "On daylight-saving days it keeps its real-time rhythm, its hour field being * or "
            "a step: when the clocks go back the repeated hour runs too; when they go forward "
            "the wall times that do not exist are skipped."
        )
    return (
        "On daylight-saving days, a time that does not exist (the clocks go forward): "
        f"{OnGap(plan.on_gap).label}; a time that happens twice (the clocks go back): "
        f"{OnFold(plan.on_fold).label}."
    )

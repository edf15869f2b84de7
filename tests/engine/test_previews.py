"""Tests for django_weft.engine.schedules.previews: the stored schedules a preview plans.

The rows are read in one query, with only the fields the preview reads; disabled rows,
other jobs and other names are left out when asked.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from django_weft.engine.schedules.previews import enabled_schedules, schedules_enabled
from django_weft.models import Schedule
from django_weft.timing.preview import preview

pytestmark = pytest.mark.django_db

TORONTO = "America/Toronto"


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    """An aware UTC datetime."""
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def schedule(name: str, **fields: Any) -> Schedule:
    """A saved tests.noop schedule."""
    return Schedule.objects.create(name=name, job="tests.noop", **fields)


def test_enabled_schedules_disabled_row() -> None:
    """A disabled schedule is not part of the preview."""
    schedule("on", every=timedelta(hours=1))
    schedule("off", every=timedelta(hours=1), enabled=False)
    assert [row.name for row in enabled_schedules()] == ["on"]


def test_preview_reads_rows_in_one_query(django_assert_num_queries: Any) -> None:
    """Reading and planning every kind of row is one query: nothing is fetched per row."""
    schedule("cron", cron="0 7 * * *", timezone=TORONTO)
    schedule("every", every=timedelta(hours=6))
    armed = schedule("armed", every=timedelta(hours=6))
    Schedule.objects.filter(pk=armed.pk).update(armed=True, next_due=utc(2026, 3, 7, 1))
    schedule("once", at=utc(2026, 3, 7, 9))
    schedule("late", at=utc(2026, 3, 6, 9))
    with django_assert_num_queries(1):
        lines = preview(utc(2026, 3, 7), timedelta(days=1), enabled_schedules())
        rendered = [line.render() for line in lines]
    assert len(rendered) == 1 + 4 + 4 + 1 + 1


def test_enabled_schedules_of_jobs_and_names() -> None:
    """enabled_schedules() narrows to jobs, to names, or to both."""
    schedule("a", every=timedelta(hours=1))
    Schedule.objects.create(name="b", job="tests.broken", every=timedelta(hours=1))
    schedule("c", every=timedelta(hours=1))
    assert [row.name for row in enabled_schedules(jobs=["tests.broken"])] == ["b"]
    assert [row.name for row in enabled_schedules(names=["c", "b"])] == ["b", "c"]
    assert [row.name for row in enabled_schedules(jobs=["tests.noop"], names=["b", "c"])] == ["c"]


# --- runjobs --plan ----------------------------------------------------------------------


def test_enabled_schedules_due_by() -> None:
    """With due_by, rows armed past it are left out; rows not armed yet are kept."""
    schedule("fresh", every=timedelta(hours=1))
    soon, later = (
        schedule("soon", every=timedelta(hours=1)),
        schedule("later", cron="0 7 * * *", timezone=TORONTO),
    )
    Schedule.objects.filter(pk=soon.pk).update(armed=True, next_due=utc(2026, 3, 7, 11, 30))
    Schedule.objects.filter(pk=later.pk).update(armed=True, next_due=utc(2026, 3, 7, 12))
    due_by = utc(2026, 3, 7, 12) - timedelta(minutes=1)
    assert [row.name for row in enabled_schedules(due_by=due_by)] == ["fresh", "soon"]
    assert [row.name for row in enabled_schedules()] == ["fresh", "later", "soon"]


def test_schedules_enabled_names_each_asked_for_row() -> None:
    """Whether each named row is enabled; a name no row has is left out."""
    schedule("on", every=timedelta(hours=1))
    schedule("off", every=timedelta(hours=1), enabled=False)
    assert schedules_enabled(["on", "off", "missing"]) == {"on": True, "off": False}

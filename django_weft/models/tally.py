"""The overview's history: how many runs finished, by bar, job, queue and outcome, and
how long they took, by bar, job and duration bin; and how far each grain is counted.

Each of the overview's ranges reads rows of its own grain (:data:`GRAINS`: a minute for
the last hour, ten minutes for a day, an hour for a week, six hours for a month), so a
chart reads about as many rows as it has bars times keys, with ten million runs stored
as with ten. :mod:`django_weft.engine.history.tallying` writes them; the minutes not counted
yet are read from the run table. Counts and durations are apart: with both in one row,
every outcome would multiply every duration bin.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import models
from django.db.models import Case, DurationField, Expression, ExpressionWrapper, F, Value, When
from django.db.models.functions import (
    ExtractHour,
    ExtractMinute,
    Floor,
    TruncDay,
    TruncHour,
    TruncMinute,
)

from django_weft.timing.durations import BOUNDS, NO_DURATION

#: The grains of the rows, in minutes, finest first; each divides the next.
GRAINS = (1, 10, 60, 360)


class RunTally(models.Model):
    """The runs of one job and queue that finished with one outcome in one bar."""

    start = models.DateTimeField(help_text="The first moment of the bar, UTC.")
    minutes = models.PositiveSmallIntegerField(help_text="The bar's length: 1, 10, 60 or 360.")
    job = models.CharField(max_length=200)
    queue = models.CharField(max_length=100)
    status = models.CharField(max_length=16)
    runs = models.PositiveIntegerField()

    class Meta:
        verbose_name = "run tally"
        default_permissions = ()
        indexes = [models.Index(fields=["minutes", "start"], name="weft_tally_range")]

    def __str__(self) -> str:
        return f"{self.runs} {self.job} {self.status} at {self.start.isoformat()}"


class DurationTally(models.Model):
    """The runs of one job that ended done or failed in one bar, with durations in one
    bin of :data:`~django_weft.timing.durations.BOUNDS`."""

    start = models.DateTimeField(help_text="The first moment of the bar, UTC.")
    minutes = models.PositiveSmallIntegerField(help_text="The bar's length: 1, 10, 60 or 360.")
    job = models.CharField(max_length=200)
    duration_bin = models.SmallIntegerField()
    runs = models.PositiveIntegerField()

    class Meta:
        verbose_name = "duration tally"
        default_permissions = ()
        indexes = [models.Index(fields=["minutes", "start"], name="weft_duration_range")]

    def __str__(self) -> str:
        return f"{self.runs} {self.job} in bin {self.duration_bin} at {self.start.isoformat()}"


class TallyMark(models.Model):
    """How far one grain is counted: runs that finished before ``through`` are in its rows."""

    minutes = models.PositiveSmallIntegerField(primary_key=True)
    through = models.DateTimeField()

    class Meta:
        verbose_name = "tally mark"
        default_permissions = ()

    def __str__(self) -> str:
        return f"{self.minutes}-minute bars counted through {self.through.isoformat()}"


def bar_start(moment: datetime, minutes: int) -> datetime:
    """The start of the bar of ``minutes`` that ``moment`` falls in, on the UTC clock."""
    moment = moment.astimezone(UTC).replace(second=0, microsecond=0)
    if minutes < 60:
        return moment.replace(minute=moment.minute - moment.minute % minutes)
    hours = minutes // 60
    return moment.replace(minute=0, hour=moment.hour - moment.hour % hours)


def bar_of(field: str, minutes: int) -> dict[str, Expression]:
    """Group expressions for the bar of ``minutes`` the moment ``field`` falls in: a
    truncated moment (``bar_at``) and the bar within it (``bar_within``, a 10-minute bar
    within its hour, a 6-hour bar within its day); see :func:`bar_at`."""
    zero: Expression = Value(0)
    if minutes == 1:
        return {"bar_at": TruncMinute(field, tzinfo=UTC), "bar_within": zero}
    if minutes < 60:
        within = Floor(ExtractMinute(field, tzinfo=UTC) / minutes)
        return {"bar_at": TruncHour(field, tzinfo=UTC), "bar_within": within}
    if minutes == 60:
        return {"bar_at": TruncHour(field, tzinfo=UTC), "bar_within": zero}
    within = Floor(ExtractHour(field, tzinfo=UTC) / (minutes // 60))
    return {"bar_at": TruncDay(field, tzinfo=UTC), "bar_within": within}


def bar_at(row: dict[str, Any], minutes: int) -> datetime:
    """The start of the bar a row grouped by :func:`bar_of` stands for."""
    at: datetime = row["bar_at"].astimezone(UTC)
    return at + timedelta(minutes=int(row["bar_within"]) * minutes)


def duration_bin() -> Case:
    """The duration bin of each run, computed by the database (as
    :func:`~django_weft.timing.durations.bin_of` computes it in Python)."""
    # ``finished_at < started_at + top``: a moment plus an interval works alike on every
    # database, where the difference of two moments does not.
    return Case(
        When(started_at__isnull=True, then=Value(NO_DURATION)),
        *(
            When(finished_at__lt=_after_start(top), then=Value(index))
            for index, top in enumerate(BOUNDS)
        ),
        default=Value(len(BOUNDS)),
        output_field=models.SmallIntegerField(),
    )


def _after_start(seconds: float) -> ExpressionWrapper[Any]:
    return ExpressionWrapper(
        F("started_at") + Value(timedelta(seconds=seconds), output_field=DurationField()),
        output_field=models.DateTimeField(),
    )

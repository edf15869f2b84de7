"""The overview's history: how many runs finished, by minute or hour, job, queue,
outcome and duration bin; and how far the run table has been counted into it.

The charts read these rows instead of the run table, so a month of history costs the
same with ten million runs stored as with ten. :mod:`django_weft.engine.tallying` writes
them from the settled past; the unsettled last minutes are read from the run table.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import models
from django.db.models import Case, DurationField, ExpressionWrapper, F, Value, When

from django_weft.timing.durations import BOUNDS, NO_DURATION

#: The two grains of the rows, in minutes.
MINUTE, HOUR = 1, 60


class RunTally(models.Model):
    """The runs of one job and queue that finished with one outcome in one minute (or
    hour) with durations in one bin."""

    start = models.DateTimeField(help_text="The first moment of the minute or hour, UTC.")
    minutes = models.PositiveSmallIntegerField(help_text="1 (a minute's row) or 60 (an hour's).")
    job = models.CharField(max_length=200)
    queue = models.CharField(max_length=100)
    status = models.CharField(max_length=16)
    duration_bin = models.SmallIntegerField(
        help_text="The bin of timing.durations.BOUNDS; -1: never started."
    )
    runs = models.PositiveIntegerField()

    class Meta:
        verbose_name = "run tally"
        default_permissions = ()
        indexes = [models.Index(fields=["minutes", "start"], name="weft_tally_range")]

    def __str__(self) -> str:
        return f"{self.runs} {self.job} {self.status} at {self.start.isoformat()}"


class TallyMark(models.Model):
    """How far the run table is counted: one row (pk 1). Runs that finished before
    ``minutes_through`` are in the minute rows, before ``hours_through`` in the hour rows."""

    minutes_through = models.DateTimeField()
    hours_through = models.DateTimeField()

    class Meta:
        verbose_name = "tally mark"
        default_permissions = ()

    def __str__(self) -> str:
        return f"runs counted through {self.minutes_through.isoformat()}"


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

"""Jobs only the tests use."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from django_weft.context import RunContext
from django_weft.jobs import job


@job("tests.broken")
def broken(ctx: RunContext) -> None:
    raise RuntimeError("broken has no rows to work on")


@job("tests.noop")
def noop(ctx: RunContext) -> None:
    """Does nothing; counts fires in tests that only look at runs."""


class SleepArgs(serializers.Serializer[Any]):
    seconds = serializers.FloatField(min_value=0)


@job("tests.sleep", args=SleepArgs)
def sleep(ctx: RunContext, seconds: float) -> None:
    """Sleeps through the run context, so an abort or a shutdown interrupts it."""
    ctx.sleep(seconds)


@job("tests.due")
def report_due(ctx: RunContext) -> str | None:
    """Returns the due it was given, so a test reads what the job saw from the run's result."""
    return ctx.due.isoformat() if ctx.due is not None else None

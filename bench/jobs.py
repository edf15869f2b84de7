"""The benchmarks' jobs. ``bench`` is not an installed app: ``_setup`` imports this module."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rest_framework import serializers

from django_weft.exceptions import RunAborted
from django_weft.jobs.context import RunContext
from django_weft.jobs.registry import job
from django_weft.jobs.workflows import chain, workflow
from django_weft.models import Group


@job("bench.noop")
def noop(ctx: RunContext) -> None:
    """Does nothing: what is measured is the machinery around it."""


@job("bench.gathered")
def gathered(ctx: RunContext, *, group: str) -> int:
    """A group's callback: how many of its members ended done (one read of its row)."""
    return Group.objects.get(pk=group).done


class SleepArgs(serializers.Serializer[Any]):
    seconds = serializers.FloatField(min_value=0)
    record_dir = serializers.CharField(required=False, allow_blank=True)


@job("bench.sleep", args=SleepArgs)
def sleep(ctx: RunContext, seconds: float, record_dir: str = "") -> None:
    """Sleeps through the run context; with ``record_dir``, notes when the abort was seen.

    The moment ``RunAborted`` reaches the job is written (``time.time()``) to the file
    ``<record_dir>/<run id>`` before the exception goes on up.
    """
    try:
        ctx.sleep(seconds)
    except RunAborted:
        seen = time.time()
        if record_dir:
            Path(record_dir, str(ctx.run_id)).write_text(repr(seen))
        raise


#: Two no-op steps, the second after the first: what a dependency costs
#: (bench/step_latency.py).
pair = workflow("bench.pair", steps=chain(noop, noop))


@job("bench.keyed", concurrency_key=lambda args, owner: str(args["key"]))
def keyed(ctx: RunContext, *, key: str) -> None:
    """Does nothing, under a key: what flow limits per key count."""

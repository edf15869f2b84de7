"""Why a queued run waits on a flow limit, for the pages that show a run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django_weft.engine.limits.budget import LIMITING, Budget, covers
from django_weft.models import FlowLimit, Run, RunStatus


@dataclass(frozen=True)
class Hold:
    """A limit holding a queued run back now: its ``name``, whether its ``concurrency``
    or its ``rate`` is full (``used`` of ``allowed``), and when a rate lets the run's key
    begin again (``next_slot``)."""

    name: str
    kind: str
    used: int
    allowed: int
    next_slot: datetime | None = None


def holds(run: Run, now: datetime) -> list[Hold]:
    """The limits that hold ``run`` back now, if it is queued (none otherwise)."""
    if run.status != RunStatus.QUEUED:
        return []
    limits = [
        limit for limit in FlowLimit.objects.filter(LIMITING) if covers(limit, run.job, run.queue)
    ]
    if not limits:
        return []
    budget = Budget.counted(limits, now)
    key = run.concurrency_key
    found = []
    for limit in limits:
        if limit.concurrency is not None and budget.running(limit, key) >= limit.concurrency:
            found.append(
                Hold(limit.name, "concurrency", budget.running(limit, key), limit.concurrency)
            )
        if limit.rate is not None and budget.begun(limit, key) >= limit.rate:
            found.append(
                Hold(
                    limit.name,
                    "rate",
                    budget.begun(limit, key),
                    limit.rate,
                    budget.slot_of(limit, key),
                )
            )
    return found

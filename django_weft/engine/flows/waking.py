"""Waking: a waiting run whose moment has come (its sleep ended, or its wait for a
signal timed out) is queued again, to go on where it waited.

The claim never looks at waiting runs; the worker's look queues them when the earliest
``wake_at`` (part of :meth:`~django_weft.models.run.RunQuerySet.next_retry`) has come,
and the next claim takes them like any queued run, continuing the same attempt
(``resuming``). Each wake is conditional on the run still waiting, so two workers waking
the same run queue it once.
"""

from __future__ import annotations

from datetime import datetime

from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus

#: How many runs one look wakes at most; the rest wake at the next (which comes at once,
#: the earliest of them being due).
WAKE_BATCH = 500


def wake_due(now: datetime, changes: Changes) -> int:
    """Queue the waiting runs due by ``now`` (at most :data:`WAKE_BATCH`); how many."""
    due = list(
        Run.objects.due_to_wake(now).order_by("wake_at").values_list("pk", flat=True)[:WAKE_BATCH]
    )
    if not due:
        return 0
    woken = Run.objects.filter(pk__in=due, status=RunStatus.WAITING).update(
        status=RunStatus.QUEUED, resuming=True, wake_at=None, awaiting=""
    )
    for run_id in due:
        changes.run(run_id)
    return woken

"""Housekeeping: delete finished runs that are old enough, in bounded batches.

A batch is one transaction over at most ``size`` runs: the runs, their earlier attempts
(by cascade) and their state documents. Each schedule's last run is kept, because the
schedule's last-run record points at it. Batches never hold locks for long, so pruning a
million rows goes on beside a busy worker instead of stopping it.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection, transaction

from django_weft.models import Document, Run, Schedule, WorkerProcess
from django_weft.models.run import UNFINISHED


def prune_batch(*, before: datetime, size: int) -> int:
    """Delete up to ``size`` runs that finished before ``before``; returns how many."""
    with transaction.atomic():
        old = (
            Run.objects.filter(finished_at__lt=before)
            .exclude(status__in=UNFINISHED)
            .exclude(pk__in=Schedule.objects.filter(last_run__isnull=False).values("last_run"))
            .order_by("finished_at")
        )
        if connection.features.has_select_for_update_skip_locked:
            # Two workers pruning at once take different batches.
            old = old.select_for_update(skip_locked=True)
        batch = list(old.values_list("pk", "state_id")[:size])
        if not batch:
            return 0
        run_ids = [run_id for run_id, _ in batch]
        state_ids = [state_id for _, state_id in batch if state_id is not None]
        Run.objects.filter(pk__in=run_ids).delete()
        if state_ids:
            Document.objects.filter(pk__in=state_ids).delete()
        return len(run_ids)


def prune_workers(*, before: datetime) -> int:
    """Delete the rows of worker processes that stopped before ``before``."""
    deleted, _ = WorkerProcess.objects.filter(stopped_at__lt=before).delete()
    return deleted


def prune(*, before: datetime, size: int) -> int:
    """Delete every run that finished before ``before``, ``size`` at a time, then the rows
    of workers that stopped before it; returns how many runs went."""
    total = 0
    while deleted := prune_batch(before=before, size=size):
        total += deleted
    prune_workers(before=before)
    return total

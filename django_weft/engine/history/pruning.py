"""Housekeeping: delete finished runs that are old enough, in bounded batches.

A batch is one transaction over at most ``size`` runs: the runs, their earlier attempts
(by cascade) and their state documents. Each schedule's last run is kept, because the
schedule's last-run record points at it. Batches never hold locks for long, so pruning a
million rows goes on beside a busy worker instead of stopping it.

The audit trail goes with the runs, at the same age: the audit records of actions taken
before ``before``, and the admin history (``LogEntry``) of django-weft's objects from then.
So do the groups and workflows that ended before then once none of their runs is left,
and the begins recorded under a limit that no longer has a rate (a rate's own begins
are dropped by the claims that count them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.db import connection, models, transaction
from django.db.models import Exists, OuterRef

from django_weft.models import (
    AuditRecord,
    Document,
    FlowBegin,
    Group,
    Run,
    Schedule,
    WorkerProcess,
    Workflow,
    WorkflowStep,
)
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


def prune_audit(*, before: datetime, size: int) -> int:
    """Delete the records of actions taken before ``before``, and the admin history of
    django-weft's objects from then, ``size`` rows a transaction; returns how many
    audit records went."""
    total = _delete_in_batches(AuditRecord.objects.older_than(before), size)
    if apps.is_installed("django.contrib.admin"):
        log_entry = apps.get_model("admin", "LogEntry")
        ours = ContentType.objects.filter(app_label="django_weft")
        old = log_entry._default_manager.filter(content_type__in=ours, action_time__lt=before)
        _delete_in_batches(old, size)
    return total


def prune_flows(*, before: datetime, size: int) -> int:
    """Delete the groups and workflows that ended before ``before`` and have no run left
    (a group still a step of a workflow under way is kept), and the begins from before
    then under limits without a rate, ``size`` rows a transaction; returns how many
    groups and workflows went."""
    workflows = Workflow.objects.filter(ended_at__lt=before).exclude(
        Exists(Run.objects.filter(workflow=OuterRef("pk")))
    )
    groups = (
        Group.objects.filter(ended_at__lt=before)
        .exclude(Exists(Run.objects.filter(group=OuterRef("pk"))))
        .exclude(Exists(WorkflowStep.objects.filter(group=OuterRef("pk"), workflow__ended_at=None)))
    )
    total = _delete_in_batches(workflows, size) + _delete_in_batches(groups, size)
    _delete_in_batches(FlowBegin.objects.filter(limit__rate=None, at__lt=before), size)
    return total


def prune_besides_runs(*, before: datetime, size: int) -> tuple[int, int]:
    """What goes once the old runs are gone: the rows of workers that stopped before
    ``before``, the groups, workflows and stale begins of :func:`prune_flows`, and the
    audit trail from before then; returns (groups and workflows, audit records) deleted."""
    prune_workers(before=before)
    flows = prune_flows(before=before, size=size)
    return flows, prune_audit(before=before, size=size)


def _delete_in_batches(rows: models.QuerySet[Any], size: int) -> int:
    total = 0
    while True:
        with transaction.atomic():
            batch = list(rows.order_by("pk").values_list("pk", flat=True)[:size])
            _, deleted = rows.model._default_manager.filter(pk__in=batch).delete()
        total += int(deleted.get(rows.model._meta.label, 0))  # not those gone by cascade
        if len(batch) < size:
            return total


def prune(*, before: datetime, size: int) -> int:
    """Delete every run that finished before ``before``, ``size`` at a time, then what
    :func:`prune_besides_runs` deletes; returns how many runs went."""
    total = 0
    while deleted := prune_batch(before=before, size=size):
        total += deleted
    prune_besides_runs(before=before, size=size)
    return total

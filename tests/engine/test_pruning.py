"""Housekeeping: old finished runs go, in bounded batches; what is still needed stays."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_weft.engine.history.pruning import prune, prune_batch
from django_weft.jobs.registry import registry
from django_weft.models import (
    Attempt,
    AuditAction,
    AuditRecord,
    Document,
    EntryPoint,
    Run,
    RunStatus,
    Schedule,
    WorkerProcess,
)
from django_weft.operations import start
from django_weft.testing import DrivenClock, Rehearsal

pytestmark = pytest.mark.django_db(transaction=True)

DAY = timedelta(days=1)


def finished_run(status: str, days_ago: float, **fields: Any) -> Run:
    """A run of a job with a state document, finished ``days_ago`` days ago, with an attempt."""
    run = start(registry.get("tests.private"), {"label": "x", "secret": "y"})
    moment = timezone.now() - timedelta(days=days_ago)
    Run.objects.filter(pk=run.pk).update(status=status, finished_at=moment, **fields)
    Attempt.objects.create(run=run, number=1, status=RunStatus.FAILED, ended_at=moment)
    return Run.objects.get(pk=run.pk)


def test_prune_deletes_old_finished_runs_with_attempts_and_state() -> None:
    """Old done/failed/aborted/lost runs go with their attempts and state documents."""
    old = [finished_run(status, 40) for status in ("done", "failed", "aborted", "lost")]
    assert prune(before=timezone.now() - 30 * DAY, size=1000) == 4
    assert not Run.objects.filter(pk__in=[run.pk for run in old]).exists()
    assert not Attempt.objects.exists()
    assert not Document.objects.filter(pk__in=[run.state_id for run in old]).exists()


def test_prune_keeps_recent_unfinished_and_schedule_last_runs() -> None:
    """Runs that finished lately, runs still going and each schedule's last run stay."""
    recent = finished_run("done", 2)
    last = finished_run("done", 90)
    Schedule.objects.create(name="nightly", job="tests.noop", every=DAY)
    Schedule.objects.filter(name="nightly").update(last_run=last)
    queued = start(registry.get("tests.noop"))
    Run.objects.filter(pk=queued.pk).update(created_at=timezone.now() - 90 * DAY)
    assert prune(before=timezone.now() - 30 * DAY, size=1000) == 0
    assert Run.objects.filter(pk__in=[recent.pk, last.pk, queued.pk]).count() == 3


def test_prune_batch_is_bounded_and_costs_the_same_whatever_is_left() -> None:
    """Each batch deletes at most its size, with the same queries at 12 rows left or 3."""
    for _ in range(12):
        finished_run("done", 40)
    before = timezone.now() - 30 * DAY
    counts = []
    for _ in range(3):
        with CaptureQueriesContext(connection) as queries:
            assert prune_batch(before=before, size=3) == 3
        counts.append(len(queries))
    assert Run.objects.count() == 3
    assert len(set(counts)) == 1, counts
    assert prune_batch(before=before, size=10) == 3
    assert prune_batch(before=before, size=10) == 0


def test_prunejobs_command_deletes_and_says_how_many() -> None:
    """``prunejobs --older-than 30d`` deletes what is older and reports the count."""
    finished_run("failed", 31)
    finished_run("done", 29)
    long_ago = timezone.now() - 40 * DAY
    gone = WorkerProcess.objects.create(
        hostname="h", pid=1, started_at=long_ago, last_beat=long_ago, stopped_at=long_ago
    )
    alive = WorkerProcess.objects.create(
        hostname="h", pid=2, started_at=long_ago, last_beat=timezone.now()
    )
    out = StringIO()
    call_command("prunejobs", "--older-than", "30d", "--batch-size", "1", stdout=out)
    assert out.getvalue().startswith("deleted 1 run(s) that finished before ")
    assert Run.objects.count() == 1
    assert list(WorkerProcess.objects.values_list("pk", flat=True)) == [alive.pk]
    assert not WorkerProcess.objects.filter(pk=gone.pk).exists()


@pytest.mark.parametrize("value", ["soon", "0d", "-3d"])
def test_prunejobs_refuses_a_bad_age(value: str) -> None:
    """A bad --older-than is refused with a message naming it; nothing is deleted."""
    finished_run("done", 40)
    with pytest.raises(CommandError, match="older-than"):
        call_command("prunejobs", "--older-than", value)
    assert Run.objects.count() == 1


def test_runjobs_prunes_when_the_setting_asks(clock: DrivenClock, rehearsal: Rehearsal) -> None:
    """With WEFT_PRUNE_AFTER set, the worker deletes old runs as it goes; without, never."""
    old = finished_run("done", 0)
    Run.objects.filter(pk=old.pk).update(finished_at=clock.now() - 40 * DAY)
    rehearsal.advance(timedelta(0))
    assert Run.objects.filter(pk=old.pk).exists(), "pruning is off by default"
    with override_settings(WEFT_PRUNE_AFTER=30 * DAY, WEFT_PRUNE_BATCH_SIZE=1):
        rehearsal.advance(timedelta(seconds=1))
        assert not Run.objects.filter(pk=old.pk).exists()


def test_runjobs_prunes_the_audit_trail_with_the_runs(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """The worker's pruning takes the audit records from before the same moment too."""
    fields = {
        "action": AuditAction.ABORT,
        "object_type": "run",
        "object_repr": "a run",
        "text": "aborted",
        "via": EntryPoint.PYTHON,
    }
    AuditRecord.objects.create(at=clock.now() - 40 * DAY, object_id="old", **fields)
    AuditRecord.objects.create(at=clock.now() - DAY, object_id="recent", **fields)
    with override_settings(WEFT_PRUNE_AFTER=30 * DAY, WEFT_PRUNE_BATCH_SIZE=1):
        rehearsal.advance(timedelta(seconds=1))
    assert list(AuditRecord.objects.values_list("object_id", flat=True)) == ["recent"]

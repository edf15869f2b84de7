"""Housekeeping: old finished runs go, in bounded batches, and the groups, workflows and
begins they leave behind; what is still needed stays."""

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
    FlowBegin,
    FlowLimit,
    Group,
    Run,
    RunStatus,
    Schedule,
    WorkerProcess,
    Workflow,
    WorkflowStep,
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


def ended_flows(days_ago: float) -> tuple[Workflow, Group]:
    """A workflow that ended ``days_ago`` days ago, with a group step whose group ended
    then too."""
    moment = timezone.now() - timedelta(days=days_ago)
    workflow = Workflow.objects.create(
        name="tests.pair", status="done", created_at=moment, ended_at=moment
    )
    group = Group.objects.create(name="album", created_at=moment, ended_at=moment)
    WorkflowStep.objects.create(
        workflow=workflow, name="thumbs", position=0, job="tests.noop", group=group
    )
    return workflow, group


def test_prune_deletes_ended_groups_and_workflows_once_their_runs_are_gone() -> None:
    """A workflow and a group that ended before the age go (the workflow's steps with
    it) once none of their runs is left; one with a run left, one ended since, and a
    group that is a step of a workflow still under way stay."""
    gone_workflow, gone_group = ended_flows(40)
    finished_run("done", 40, workflow=gone_workflow, group=gone_group)
    kept_workflow, kept_group = ended_flows(40)
    finished_run("done", 2, workflow=kept_workflow, group=kept_group)
    recent_workflow, recent_group = ended_flows(2)
    under_way, step_group = ended_flows(40)
    Workflow.objects.filter(pk=under_way.pk).update(status="running", ended_at=None)
    assert prune(before=timezone.now() - 30 * DAY, size=1) == 1
    assert set(Workflow.objects.values_list("pk", flat=True)) == {
        kept_workflow.pk,
        recent_workflow.pk,
        under_way.pk,
    }
    assert set(Group.objects.values_list("pk", flat=True)) == {
        kept_group.pk,
        recent_group.pk,
        step_group.pk,
    }
    assert not WorkflowStep.objects.filter(workflow_id=gone_workflow.pk).exists()


def test_prune_deletes_old_begins_of_a_limit_without_a_rate_only() -> None:
    """A limit's rate removed leaves its begins counted by no claim: old ones go. A
    rate's own begins are left to the claims that count them."""
    now = timezone.now()
    was_rated = FlowLimit.objects.create(name="was-rated", job="tests.noop", updated_at=now)
    rated = FlowLimit.objects.create(
        name="rated", job="tests.noop", rate=5, period=DAY, updated_at=now
    )
    for limit in (was_rated, rated):
        FlowBegin.objects.create(limit=limit, at=now - 40 * DAY)
    recent = FlowBegin.objects.create(limit=was_rated, at=now - 2 * DAY)
    prune(before=now - 30 * DAY, size=1000)
    assert set(FlowBegin.objects.values_list("limit__name", "at")) == {
        ("rated", now - 40 * DAY),
        ("was-rated", recent.at),
    }


def test_prunejobs_says_how_many_groups_and_workflows_went() -> None:
    ended_flows(40)
    out = StringIO()
    call_command("prunejobs", "--older-than", "30d", stdout=out)
    assert "deleted 2 group(s) and workflow(s) that ended before then" in out.getvalue()

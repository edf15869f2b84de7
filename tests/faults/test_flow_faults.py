"""Flows through what production does to them, with real ``runjobs`` processes on a
throwaway PostgreSQL: a worker SIGKILLed after a recorded step, a waiting run and its
signal through a database restart, a 1,000-member group through a killed worker and a
database restart, a workflow whose step's worker is killed, a group step whose member's
worker is killed."""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Count
from django.test import Client

from django_weft.engine.flows.groups import Callback
from django_weft.engine.flows.workflows import CANCELLED
from django_weft.engine.runs.starting import StartRequest
from django_weft.jobs.registry import registry
from django_weft.models import (
    Run,
    RunStatus,
    Signal,
    StepKind,
    StepRecord,
    Workflow,
    WorkflowStatus,
)
from django_weft.operations import retry_step, start, start_group, start_workflow
from tests.faults.conftest import reachable
from tests.faults.servers import PostgresCluster
from tests.flows.jobs import calls
from tests.processes import Runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_run_killed_after_a_recorded_step_does_not_redo_it(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """The worker dies (SIGKILL) after the charge was recorded; another worker finishes
    the run as lost and retries it, and the retry reads the charge instead of making it."""
    run = start(registry.get("tests.flows.charge_then_hang"))
    doomed = start_runjobs("--concurrency", "1")
    # The step's record, not the charge's own count, which commits first: a worker killed
    # between the two runs the step again, as docs/flows.md says.
    recorded = StepRecord.objects.filter(run_id=run.pk, kind=StepKind.STEP, name="charge")
    wait_for(recorded.exists, what="the charge to be recorded")
    doomed.send_signal(signal.SIGKILL)
    doomed.finish()
    survivor = start_runjobs()
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=120, what="the retry")
    done = Run.objects.get(pk=run.pk)
    assert (done.status, done.result) == (RunStatus.DONE, {"charge": 1, "attempt": 2})
    assert calls(run.pk) == {"charge": 1}, "charged once"
    assert survivor.poll() is None


def test_waiting_run_and_its_signal_through_a_database_restart(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs]
) -> None:
    """A run waits through a restart of its database, holding no worker; a signal sent
    while the database is down is refused with a clear 503 and nothing half-written;
    sent again once it is back, it wakes the run, which gets its payload."""
    user = get_user_model().objects.create_user("approver")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    run = start(registry.get("tests.flows.approval"), owner=user)
    worker = start_runjobs("--concurrency", "1")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.WAITING, what="the wait")
    client = Client()
    client.force_login(user)
    signal_url = f"/api/weft/runs/{run.pk}/signal/"
    body = {"name": "approval", "payload": {"by": "ada"}}

    postgres.stop()
    try:
        refused = client.post(signal_url, body, content_type="application/json")
    finally:
        postgres.start()
    assert refused.status_code == 503, refused.content
    wait_for(reachable, what="this process to reach the database again")
    assert not Signal.objects.exists(), "nothing half-written"
    assert Run.objects.get(pk=run.pk).status == RunStatus.WAITING

    sent = client.post(signal_url, body, content_type="application/json")
    assert sent.status_code == 202, sent.content
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=120, what="the run to go on")
    done = Run.objects.get(pk=run.pk)
    assert (done.status, done.result, done.attempt) == (RunStatus.DONE, {"by": "ada"}, 1), (
        done.error_message
    )
    assert calls(run.pk) == {"body": 2}
    assert worker.poll() is None, worker.output()


def test_thousand_member_group_through_a_killed_worker_and_a_database_restart(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs]
) -> None:
    """Four workers drain a 1,000-member group; one is SIGKILLed midway and the database
    restarts: every member ends once, the callback starts exactly once, after the last
    member, and the summary it reads is right."""
    job = registry.get("tests.flows.slow_member")
    group = start_group(
        [StartRequest(job, {"number": n}) for n in range(1000)],
        callback=Callback(registry.get("tests.flows.gather"), {"label": "thousand"}),
    )
    members = Run.objects.filter(group=group)
    workers = [start_runjobs("--concurrency", "4") for _ in range(4)]
    wait_for(lambda: members.filter(status="done").count() >= 200, what="the group under way")
    workers[0].send_signal(signal.SIGKILL)
    workers[0].finish()
    wait_for(lambda: members.filter(status="done").count() >= 400, what="more members done")
    postgres.restart("fast")
    wait_for(reachable, what="this process to reach the database again")

    wait_for(
        lambda: Run.objects.filter(job="tests.flows.gather").exists(),
        timeout=300,
        what="the callback",
    )
    wait_for(
        lambda: Run.objects.get(job="tests.flows.gather").is_finished,
        timeout=120,
        what="the callback to finish",
    )
    assert not members.unfinished().exists()
    statuses = dict(members.values_list("status").annotate(count=Count("pk")))
    assert set(statuses) == {RunStatus.DONE}, statuses
    group.refresh_from_db()
    assert group.summary() == {
        "total": 1000,
        "unfinished": 0,
        "done": 1000,
        "failed": 0,
        "aborted": 0,
        "lost": 0,
    }
    (callback,) = Run.objects.filter(job="tests.flows.gather")
    assert group.callback_run_id == callback.pk
    assert callback.status == RunStatus.DONE, callback.error_message
    assert callback.result["summary"] == group.summary()
    assert callback.result["results"] == list(range(1000))
    last = members.order_by("-finished_at").values_list("finished_at", flat=True).first()
    assert last is not None
    assert callback.created_at >= last, "the callback started with the last member's finish"
    for worker in workers[1:]:
        assert worker.poll() is None, worker.output()


def test_workflow_whose_step_worker_is_killed_goes_on_when_the_step_is_retried(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """The worker running a workflow's first step dies (SIGKILL); another finishes the
    step lost, which cancels the steps after it without starting them. Retrying the step
    runs it and then each step after it, each started once."""
    workflow = start_workflow("tests.killed")
    first = workflow.steps.get(name="first").run
    assert first is not None
    doomed = start_runjobs("--concurrency", "1")
    wait_for(lambda: Run.objects.get(pk=first.pk).status == RunStatus.RUNNING, what="the step")
    doomed.send_signal(signal.SIGKILL)
    doomed.finish()
    survivor = start_runjobs()
    wait_for(
        lambda: Workflow.objects.get(pk=workflow.pk).status == WorkflowStatus.FAILED,
        timeout=120,
        what="the step to be found lost, and the workflow to end",
    )
    assert Run.objects.get(pk=first.pk).status == RunStatus.LOST
    cancelled = Run.objects.filter(workflow=workflow).exclude(pk=first.pk)
    assert {(run.status, run.error_type) for run in cancelled} == {(RunStatus.ABORTED, CANCELLED)}
    assert not cancelled.filter(started_at__isnull=False).exists(), "nothing after it started"

    retry_step(workflow, "first")
    wait_for(
        lambda: Workflow.objects.get(pk=workflow.pk).status == WorkflowStatus.DONE,
        timeout=120,
        what="the workflow to go on and end",
    )
    current = {step.name: step.run for step in workflow.steps.select_related("run")}
    assert {name: (run.status, run.attempt) for name, run in current.items() if run} == {
        "first": (RunStatus.DONE, 1),
        "second": (RunStatus.DONE, 1),
        "third": (RunStatus.DONE, 1),
    }
    started = Run.objects.filter(workflow=workflow, started_at__isnull=False)
    assert started.count() == 4, "the lost step, its retry, and each step after it once"
    assert survivor.poll() is None


def test_group_step_whose_member_worker_is_killed_goes_on_when_the_step_is_retried(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """The worker running a group step's member dies (SIGKILL); another finishes the
    member lost, the group ends, and the step fails without starting the step after it.
    Retrying the step runs only the lost member again; the step gathers all four results
    once, and the step after it runs once."""
    workflow = start_workflow("tests.killed_group")
    step = workflow.steps.get(name="squares")
    hanging = Run.objects.get(group=step.group_id, args__number=0)
    doomed = start_runjobs("--concurrency", "1")
    wait_for(lambda: Run.objects.get(pk=hanging.pk).status == RunStatus.RUNNING, what="it")
    doomed.send_signal(signal.SIGKILL)
    doomed.finish()
    survivor = start_runjobs()
    wait_for(
        lambda: Workflow.objects.get(pk=workflow.pk).status == WorkflowStatus.FAILED,
        timeout=120,
        what="the member to be found lost, and the workflow to end",
    )
    assert Run.objects.get(pk=hanging.pk).status == RunStatus.LOST
    total = workflow.steps.get(name="total").run
    assert total is not None
    assert (total.status, total.error_type, total.started_at) == (
        RunStatus.ABORTED,
        CANCELLED,
        None,
    )

    retry_step(workflow, "squares")
    wait_for(
        lambda: Workflow.objects.get(pk=workflow.pk).status == WorkflowStatus.DONE,
        timeout=120,
        what="the workflow to go on and end",
    )
    members = Run.objects.filter(job="tests.flows.hang_member")
    assert members.count() == 5, "four members, and the lost one's retry"
    assert members.get(retry_of=hanging).status == RunStatus.DONE
    gathered = workflow.steps.select_related("run").get(name="squares").run
    assert gathered is not None
    assert gathered.result == {"results": [0, 1, 4, 9]}
    totals = Run.objects.filter(workflow=workflow, job="tests.flows.total")
    assert totals.filter(started_at__isnull=False).count() == 1
    assert totals.get(status=RunStatus.DONE).result == 14
    assert survivor.poll() is None

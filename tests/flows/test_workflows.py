"""Workflows (DESIGN.md section 9): steps started together, each waiting (never claimed)
until its dependencies end, queued exactly once by the last of them, reading their
results; a failure cancelling what depends on it but for steps that run anyway; the
workflow's outcome and on-end job; retrying a step without redoing what was done;
abort; idempotency; refusals that write nothing; permissions and the audit trail."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.db import connection

from django_weft.engine.flows.workflows import CANCELLED
from django_weft.engine.outcomes.finishing import finish
from django_weft.engine.schedules.saving import save_schedule
from django_weft.exceptions import (
    Forbidden,
    InvalidWorkflowStep,
    StepNotRetriable,
    UnknownWorkflow,
)
from django_weft.jobs.registry import registry
from django_weft.jobs.workflows import Step, WorkflowDefinition, chain
from django_weft.live.changes import Changes
from django_weft.models import (
    AuditAction,
    AuditRecord,
    LastStatus,
    Run,
    RunStatus,
    Schedule,
    Workflow,
    WorkflowStatus,
)
from django_weft.operations import (
    abort_workflow,
    abort_workflow_for,
    retry_for,
    retry_step,
    retry_step_for,
    start_workflow,
    start_workflow_for,
)
from django_weft.testing import DrivenClock, Rehearsal
from django_weft.timing import clocks
from tests.observe.conftest import scrape, value
from tests.threads import together

pytestmark = pytest.mark.django_db(transaction=True)

NOW = timedelta(0)
HOUR = timedelta(hours=1)


def step_runs(workflow: Workflow) -> dict[str, Run]:
    """Each step's newest run, by step name."""
    return {
        step.name: Run.objects.get(pk=step.run_id)
        for step in workflow.steps.order_by("position")
        if step.run_id is not None
    }


def drain(rehearsal: Rehearsal, rounds: int = 8) -> None:
    for _ in range(rounds):
        rehearsal.advance(NOW)


def test_workflow_runs_its_steps_in_order_reading_their_results(rehearsal: Rehearsal) -> None:
    workflow = start_workflow("tests.release", {"ref": "v1"})
    runs = step_runs(workflow)
    assert {name: run.status for name, run in runs.items()} == {
        "build": RunStatus.QUEUED,
        "unit": RunStatus.WAITING,
        "e2e": RunStatus.WAITING,
        "deploy": RunStatus.WAITING,
        "announce": RunStatus.WAITING,
    }
    assert {run.workflow_id for run in runs.values()} == {workflow.pk}
    # Each step reads its dependencies' results: one that ran before them would fail.
    drain(rehearsal)
    runs = step_runs(workflow)
    assert {run.status for run in runs.values()} == {RunStatus.DONE}
    assert runs["unit"].result == {"checked": "build-v1", "kind": "unit"}
    assert runs["deploy"].result == {"deployed": ["e2e", "unit"]}
    assert runs["announce"].result == {"deploy": "done"}
    workflow.refresh_from_db()
    assert (workflow.status, workflow.unfinished) == (WorkflowStatus.DONE, 0)
    assert workflow.ended_at is not None
    ended = Run.objects.get(pk=workflow.callback_run_id)
    assert ended.args == {"workflow": str(workflow.pk), "outcome": "done"}
    assert ended.status == RunStatus.DONE
    assert Run.objects.filter(job="tests.flows.workflow_ended").count() == 1


def test_a_failed_step_cancels_what_depends_on_it_but_not_what_runs_anyway(
    rehearsal: Rehearsal,
) -> None:
    workflow = start_workflow("tests.release", {"ref": "v2", "flaky": ["e2e"]})
    drain(rehearsal)
    runs = step_runs(workflow)
    assert runs["e2e"].status == RunStatus.FAILED
    assert runs["unit"].status == RunStatus.DONE
    deploy = runs["deploy"]
    assert (deploy.status, deploy.error_type) == (RunStatus.ABORTED, CANCELLED)
    assert deploy.error_message == "cancelled: step e2e ended failed"
    assert deploy.started_at is None, "a cancelled step never ran"
    assert runs["announce"].result == {"deploy": "aborted"}
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.FAILED
    assert Run.objects.get(pk=workflow.callback_run_id).args["outcome"] == "failed"


def test_retrying_a_failed_step_goes_on_below_it_without_redoing_what_was_done(
    rehearsal: Rehearsal,
) -> None:
    workflow = start_workflow("tests.release", {"ref": "v3", "flaky": ["e2e"]})
    drain(rehearsal)
    failed = step_runs(workflow)["e2e"]
    again = retry_step(workflow, "e2e")
    assert again.retry_of_id == failed.pk
    assert again.status == RunStatus.QUEUED
    assert workflow.status == WorkflowStatus.RUNNING
    runs = step_runs(workflow)
    assert runs["deploy"].status == RunStatus.WAITING, "the cancelled deploy is started again"
    drain(rehearsal)
    runs = step_runs(workflow)
    assert {run.status for run in runs.values()} == {RunStatus.DONE}
    assert runs["deploy"].result == {"deployed": ["e2e", "unit"]}
    for job, times in (
        ("tests.flows.build", 1),
        ("tests.flows.deploy", 2),  # the cancelled one and the one that ran
        ("tests.flows.announce", 1),  # it ran anyway, done: not again
    ):
        assert Run.objects.filter(job=job, workflow=workflow).count() == times, job
    assert Run.objects.filter(job="tests.flows.check", started_at__isnull=False).count() == 3
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.DONE
    outcomes = Run.objects.filter(job="tests.flows.workflow_ended").values_list("args", flat=True)
    assert sorted(args["outcome"] for args in outcomes) == ["done", "failed"]


def test_a_step_is_retried_only_once_it_ended_otherwise_than_done_after_its_dependencies(
    rehearsal: Rehearsal,
) -> None:
    workflow = start_workflow("tests.release", {"ref": "v4", "flaky": ["e2e"]})
    with pytest.raises(StepNotRetriable, match="step build cannot be retried: its run is queued"):
        retry_step(workflow, "build")
    drain(rehearsal)
    with pytest.raises(StepNotRetriable, match="its run is done"):
        retry_step(workflow, "unit")
    with pytest.raises(StepNotRetriable, match="retry step e2e first"):
        retry_step(workflow, "deploy")
    with pytest.raises(StepNotRetriable, match="the workflow has no such step"):
        retry_step(workflow, "ship")
    assert Run.objects.filter(workflow=workflow).count() == 5, "a run a step, nothing more"


def test_a_chain_runs_one_step_after_the_other(rehearsal: Rehearsal) -> None:
    workflow = start_workflow("tests.squares", {"number": 3})
    runs = step_runs(workflow)
    assert [run.status for run in runs.values()] == ["queued", "waiting", "waiting"]
    drain(rehearsal)
    runs = step_runs(workflow)
    assert [run.result for run in runs.values()] == [9, 9, 9]
    first, second, third = runs.values()
    assert first.finished_at <= second.started_at
    assert second.finished_at <= third.started_at
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.DONE


def test_abort_ends_every_step_and_the_workflow_aborted(rehearsal: Rehearsal) -> None:
    workflow = start_workflow("tests.release", {"ref": "v5"})
    assert abort_workflow(workflow) == 5
    runs = step_runs(workflow)
    assert {run.status for run in runs.values()} == {RunStatus.ABORTED}
    assert {run.error_type for run in runs.values()} == {""}, "aborted, not cancelled"
    workflow.refresh_from_db()
    assert (workflow.status, workflow.unfinished) == (WorkflowStatus.ABORTED, 0)
    drain(rehearsal, 2)
    assert not Run.objects.filter(workflow=workflow, started_at__isnull=False).exists()


def test_a_key_returns_the_workflow_it_started() -> None:
    first = start_workflow("tests.release", {"ref": "v6"}, key="release-v6")
    again = start_workflow("tests.release", {"ref": "v6"}, key="release-v6")
    assert again.pk == first.pk
    assert Run.objects.filter(workflow=first).count() == 5


def test_a_step_its_job_refuses_refuses_the_whole_workflow_naming_the_step() -> None:
    with pytest.raises(InvalidWorkflowStep, match=r"step step1: .*extra"):
        start_workflow("tests.squares", {"number": 3, "extra": True})
    with pytest.raises(InvalidWorkflowStep, match="step build: its args could not be made: KeyE"):
        start_workflow("tests.release", {})
    with pytest.raises(UnknownWorkflow, match=r'no workflow named "tests\.nope" is defined'):
        start_workflow("tests.nope")
    assert not Workflow.objects.exists()
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        ([], "has no steps"),
        (["a", ("b", ["c"])], "after names 'c', which is not a step before it"),
        (["a", "a"], "the name is used twice"),
        (["a", ("b", ["a", "a"])], "after names a step twice"),
        (["a b"], "a step's name is a letter"),
    ],
)
def test_a_definition_that_could_never_run_fails_when_it_is_made(
    steps: list[object], problem: str
) -> None:
    job = registry.get("tests.flows.member")
    made = [
        Step(each, job) if isinstance(each, str) else Step(each[0], job, after=each[1])
        for each in steps
    ]
    with pytest.raises(ValueError, match=problem):
        WorkflowDefinition("tests.bad", tuple(made))


def test_chain_names_its_steps_in_order() -> None:
    job = registry.get("tests.flows.member")
    assert [(step.name, tuple(step.after)) for step in chain(job, job)] == [
        ("step1", ()),
        ("step2", ("step1",)),
    ]


def test_two_dependencies_ending_at_once_queue_their_dependent_once() -> None:
    """Both of deploy's dependencies finish in two transactions at the same moment: the
    one that commits last queues deploy, and only it."""
    workflow = start_workflow("tests.release", {"ref": "v7"})
    runs = step_runs(workflow)
    finish(runs["build"].pk, RunStatus.DONE, now=clocks.now(), changes=Changes())

    def end(name: str) -> None:
        try:
            finish(runs[name].pk, RunStatus.DONE, now=clocks.now(), changes=Changes())
        finally:
            connection.close()

    assert together(lambda: end("unit"), lambda: end("e2e")) == [None, None]
    runs = step_runs(workflow)
    assert runs["deploy"].status == RunStatus.QUEUED
    step = workflow.steps.get(name="deploy")
    assert step.pending == 0
    workflow.refresh_from_db()
    assert workflow.unfinished == 2


def test_checked_calls_need_the_rights_and_are_on_record() -> None:
    users = get_user_model().objects
    starter = users.create_user("starter")
    starter.user_permissions.add(Permission.objects.get(codename="add_run"))
    stranger = users.create_user("stranger")
    with pytest.raises(Forbidden, match="add_run"):
        start_workflow_for(stranger, "tests.release", {"ref": "v8"})
    assert not Workflow.objects.exists()
    workflow = start_workflow_for(starter, "tests.release", {"ref": "v8"})
    assert workflow.owner == starter
    assert {run.owner_id for run in step_runs(workflow).values()} == {starter.pk}
    with pytest.raises(Forbidden, match="change_run"):
        abort_workflow_for(stranger, workflow)
    with pytest.raises(Forbidden):
        retry_step_for(stranger, workflow, "build")
    assert abort_workflow_for(starter, workflow) == 5
    actions = list(
        AuditRecord.objects.filter(object_id=str(workflow.pk))
        .order_by("pk")
        .values_list("action", "details")
    )
    assert actions == [
        (AuditAction.WORKFLOW_START, {"steps": 5}),
        (AuditAction.WORKFLOW_ABORT, {"steps": 5}),
    ]


def test_workflow_end_is_counted_by_outcome_for_the_metrics(rehearsal: Rehearsal) -> None:
    before = scrape()
    start_workflow("tests.squares", {"number": 2})
    start_workflow("tests.release", {"ref": "m1", "flaky": ["unit"]})
    aborted = start_workflow("tests.squares", {"number": 4})
    abort_workflow(aborted)
    drain(rehearsal)
    after = scrape()
    for outcome in ("done", "failed", "aborted"):
        grew = value(after, "weft_workflows_ended_total", outcome=outcome) - value(
            before, "weft_workflows_ended_total", outcome=outcome
        )
        assert grew == 1, outcome


def test_a_schedule_fires_a_workflow_through_the_start_workflow_job(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """A schedule of ``weft.start_workflow`` starts the workflow it names at its moment;
    the starting run's result is the workflow, which runs to its end."""
    row = save_schedule(
        Schedule(
            name="release at noon",
            job="weft.start_workflow",
            args={"workflow": "tests.release", "args": {"ref": "noon"}},
            at=clock.now(),
        )
    )
    drain(rehearsal)
    (starter,) = Run.objects.filter(schedule=row)
    workflow = Workflow.objects.get()
    assert (starter.status, starter.result) == (RunStatus.DONE, str(workflow.pk))
    assert workflow.args == {"ref": "noon"}
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.DONE
    row.refresh_from_db()
    assert row.last_status == LastStatus.OK


def test_the_start_workflow_job_refuses_a_workflow_nobody_defined() -> None:
    with pytest.raises(ValidationError, match=r'workflow: no workflow named "tests\.nope"'):
        save_schedule(
            Schedule(
                name="nope", job="weft.start_workflow", args={"workflow": "tests.nope"}, every=HOUR
            )
        )
    assert not Schedule.objects.exists()


def test_a_steps_run_is_retried_as_a_step_not_as_a_loose_run(rehearsal: Rehearsal) -> None:
    workflow = start_workflow("tests.release", {"ref": "r1", "flaky": ["unit"]})
    drain(rehearsal)
    failed = step_runs(workflow)["unit"]
    admin = get_user_model().objects.create_superuser("admin")
    with pytest.raises(StepNotRetriable, match=r"step unit cannot be retried: .* retry the step"):
        retry_for(admin, failed)
    assert Run.objects.filter(retry_of=failed).count() == 0

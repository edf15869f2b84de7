"""A workflow's step that is a group (DESIGN.md section 9): its job run once for each
item ``each`` makes of the workflow's args and its dependencies' results, started when
they have ended; the step's own run waiting (never claimed) until every member ended,
then gathering their results in the items' order; a failed member failing the step and
cancelling what depends on it; a retry starting only the members that did not end done;
items that cannot be made or started cancelling the step (or refusing the workflow)
with the reason, nothing of the group written; an abort reaching the members."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection

from django_weft.engine.flows.workflows import CANCELLED
from django_weft.engine.outcomes.finishing import finish
from django_weft.exceptions import InvalidWorkflowStep
from django_weft.jobs.workflows import Step, WorkflowDefinition
from django_weft.live.changes import Changes
from django_weft.models import Group, Run, RunStatus, Workflow, WorkflowStatus, WorkflowStep
from django_weft.operations import abort_workflow, retry_step, start_workflow
from django_weft.testing import Rehearsal
from django_weft.timing import clocks
from tests.flows.jobs import member
from tests.threads import together

pytestmark = pytest.mark.django_db(transaction=True)


def drain(rehearsal: Rehearsal, rounds: int = 8) -> None:
    for _ in range(rounds):
        rehearsal.advance(timedelta(0))


def step_of(workflow: Workflow, name: str) -> WorkflowStep:
    return WorkflowStep.objects.select_related("run", "group").get(workflow=workflow, name=name)


def member_runs(step: WorkflowStep) -> list[Run]:
    """The step's members in the items' order, as the step keeps them."""
    found = Run.objects.in_bulk(step.members)
    return [found[uuid.UUID(pk)] for pk in step.members]


def test_group_step_fans_out_over_its_dependencys_result_and_gathers_in_order(
    rehearsal: Rehearsal,
) -> None:
    workflow = start_workflow("tests.album", {"count": 5})
    squares = step_of(workflow, "squares")
    assert squares.fans_out
    assert squares.group is None, "no group before the scan ended"
    assert squares.run is not None
    assert squares.run.job == "weft.gather"
    assert squares.run.status == RunStatus.WAITING
    drain(rehearsal)
    squares = step_of(workflow, "squares")
    assert squares.group is not None
    assert [run.args["number"] for run in member_runs(squares)] == [0, 1, 2, 3, 4]
    assert {run.group_id for run in member_runs(squares)} == {squares.group.pk}
    assert squares.run is not None
    assert squares.run.status == RunStatus.DONE
    # Members end in any order; the gathered results follow the items.
    assert squares.run.result == {"results": [0, 1, 4, 9, 16]}
    assert step_of(workflow, "total").run.result == 30  # type: ignore[union-attr]
    assert squares.group.summary()["done"] == 5
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.DONE


def test_the_gathering_run_is_queued_once_when_the_last_members_end_together(
    rehearsal: Rehearsal,
) -> None:
    workflow = start_workflow("tests.fanned", {"numbers": [1, 2, 3]})
    squares = step_of(workflow, "squares")
    assert squares.group is not None, "a group step with no dependency fans out at start"
    assert squares.run is not None
    first, second, third = member_runs(squares)

    def end(run: Run) -> None:
        try:
            finish(run.pk, RunStatus.DONE, now=clocks.now(), result=-1, changes=Changes())
        finally:
            connection.close()

    end(first)
    assert Run.objects.get(pk=squares.run.pk).status == RunStatus.WAITING
    assert together(lambda: end(second), lambda: end(third)) == [None, None]
    assert Run.objects.get(pk=squares.run.pk).status == RunStatus.QUEUED
    drain(rehearsal)
    assert Run.objects.get(pk=squares.run.pk).result == {"results": [-1, -1, -1]}
    assert step_of(workflow, "total").run.result == -3  # type: ignore[union-attr]
    assert Run.objects.filter(job="weft.gather").count() == 1


def test_a_group_step_of_no_items_ends_done_at_once(rehearsal: Rehearsal) -> None:
    workflow = start_workflow("tests.fanned", {"numbers": []})
    squares = step_of(workflow, "squares")
    assert squares.run is not None
    assert squares.run.status == RunStatus.QUEUED
    drain(rehearsal)
    assert Run.objects.get(pk=squares.run.pk).result == {"results": []}
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.DONE


def test_a_failed_member_fails_the_step_and_a_retry_runs_only_the_failed_members(
    rehearsal: Rehearsal,
) -> None:
    workflow = start_workflow("tests.album", {"count": 4, "flaky": [1, 3]})
    drain(rehearsal)
    squares = step_of(workflow, "squares")
    failed_gather = squares.run
    assert failed_gather is not None
    assert failed_gather.status == RunStatus.FAILED
    assert failed_gather.error_message.startswith("2 of 4 members did not end done")
    total = step_of(workflow, "total").run
    assert total is not None
    assert (total.status, total.error_type) == (RunStatus.ABORTED, CANCELLED)
    assert total.error_message == "cancelled: step squares ended failed"
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.FAILED
    before = {run.pk: run for run in member_runs(squares)}

    retried = retry_step(workflow, "squares")
    assert (retried.job, retried.status, retried.retry_of_id) == (
        "weft.gather",
        RunStatus.WAITING,
        failed_gather.pk,
    )
    squares = step_of(workflow, "squares")
    now = member_runs(squares)
    kept = [run for run in now if run.pk in before]
    assert [run.args["number"] for run in kept] == [0, 2], "what ended done is not redone"
    again = [run for run in now if run.pk not in before]
    assert [(run.args["number"], run.retry_of_id) for run in again] == [
        (1, now[1].retry_of_id),
        (3, now[3].retry_of_id),
    ]
    assert {before[run.retry_of_id].status for run in again} == {RunStatus.FAILED}  # type: ignore[index]
    assert Run.objects.filter(group=squares.group).count() == 4, "the failed ones left it"
    drain(rehearsal)
    assert Run.objects.filter(job="tests.flows.flaky_member").count() == 6
    assert Run.objects.get(pk=retried.pk).result == {"results": [0, 1, 4, 9]}
    assert step_of(workflow, "total").run.result == 14  # type: ignore[union-attr]
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.DONE


def test_items_that_cannot_be_made_refuse_the_workflow_at_start_writing_nothing(
    rehearsal: Rehearsal,
) -> None:
    with pytest.raises(InvalidWorkflowStep) as refused:
        start_workflow("tests.fanned", {"numbers": ["x"]})
    assert refused.value.step == "squares"
    assert "its members could not start" in str(refused.value)
    assert "item 0" in str(refused.value)
    assert (Workflow.objects.count(), Run.objects.count(), Group.objects.count()) == (0, 0, 0)


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"broken": True}, "cancelled: its items could not be made: KeyError('photos')"),
        ({"bad": True}, "cancelled: its members could not start: item 0 of the batch"),
    ],
)
def test_items_that_cannot_be_made_later_cancel_the_step_with_the_reason(
    rehearsal: Rehearsal, args: dict[str, object], reason: str
) -> None:
    workflow = start_workflow("tests.album", {"count": 2, **args})
    drain(rehearsal)
    squares = step_of(workflow, "squares")
    assert squares.run is not None
    assert (squares.run.status, squares.run.error_type) == (RunStatus.ABORTED, CANCELLED)
    assert squares.run.error_message.startswith(reason)
    assert squares.group is None
    assert Group.objects.count() == 0, "nothing of it written"
    assert step_of(workflow, "scan").run.status == RunStatus.DONE  # type: ignore[union-attr]
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.FAILED


def test_aborting_the_workflow_aborts_the_groups_members(rehearsal: Rehearsal) -> None:
    workflow = start_workflow("tests.fanned", {"numbers": [1, 2, 3]})
    asked = abort_workflow(workflow)
    assert asked == 5  # the gathering run, the total waiting for it, three members
    squares = step_of(workflow, "squares")
    assert {run.status for run in member_runs(squares)} == {RunStatus.ABORTED}
    assert squares.run is not None
    assert squares.run.status == RunStatus.ABORTED
    workflow.refresh_from_db()
    assert workflow.status == WorkflowStatus.ABORTED
    drain(rehearsal)
    assert not Run.objects.filter(status=RunStatus.DONE).exists(), "nothing ran after"


def test_a_group_step_takes_its_members_args_from_each_alone() -> None:
    with pytest.raises(ValueError, match="step 'squares': each is a function"):
        WorkflowDefinition(
            "tests.bad", (Step("squares", member, args={}, each=lambda given, _: []),)
        )

"""The built-in jobs of workflows.

``weft.gather`` is a group step's own run (see
:mod:`django_weft.engine.flows.group_steps`): queued when the step's group has ended, it
returns the members' results in the items' order, or fails naming those that did not end
done, so that the step ends as its members did.

``weft.start_workflow`` starts a workflow, so that whatever starts runs can start one. A
schedule fires it to start a workflow on its plan (each fire one workflow), a finish
hook chains a workflow after a run, a ``django.tasks`` caller has a name to enqueue.

Its args are ``workflow`` (a workflow the deployed code defines; another name is refused
when the schedule is saved or the run started, naming the field) and ``args`` (the
workflow's). The workflow belongs to the run's owner, and its key is the run's id: an
attempt that is retried after a lost worker finds the workflow the first attempt
started instead of starting a second. The run's result is the workflow's id.
"""

from __future__ import annotations

import uuid
from typing import Any

from rest_framework import serializers

from django_weft.engine.flows.group_steps import GATHER
from django_weft.exceptions import MembersFailed
from django_weft.jobs.context import RunContext
from django_weft.jobs.registry import job
from django_weft.jobs.workflows import workflows
from django_weft.models import Run, RunStatus, WorkflowStep
from django_weft.operations.workflows import start_workflow


class StartWorkflowArgs(serializers.Serializer[Any]):
    workflow = serializers.CharField(max_length=200)
    args = serializers.DictField(required=False, default=dict)

    def validate_workflow(self, value: str) -> str:
        if workflows.known(value) is None:
            raise serializers.ValidationError(f'no workflow named "{value}" is defined')
        return value


@job("weft.start_workflow", args=StartWorkflowArgs)
def start_workflow_job(ctx: RunContext, *, workflow: str, args: dict[str, Any]) -> str:
    """Start ``workflow`` with ``args`` as the run's owner, once per run."""
    started = start_workflow(workflow, args, owner=ctx.run.owner, key=f"run:{ctx.run_id}")
    return str(started.pk)


@job(GATHER)
def gather(ctx: RunContext) -> dict[str, list[Any]]:
    """The results of the members of this run's group step, in the items' order."""
    step = WorkflowStep.objects.filter(run_id=ctx.run_id).first()
    if step is None:
        raise LookupError("this run is no workflow's group step: weft.gather has nothing to gather")
    found = Run.objects.only("status", "result", "error_message").in_bulk(step.members)
    members = [found[uuid.UUID(member)] for member in step.members if uuid.UUID(member) in found]
    failed = [run for run in members if run.status != RunStatus.DONE]
    if failed or len(members) < len(step.members):
        first = (
            f"run {failed[0].pk} {failed[0].status}: {failed[0].error_message}"
            if failed
            else "a deleted run"
        )
        raise MembersFailed(
            len(step.members) - len(members) + len(failed), len(step.members), first
        )
    return {"results": [run.result for run in members]}

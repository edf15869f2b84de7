"""A workflow's step that is a group: its job run once for each item, gathered after.

Such a step's own run is a run of :data:`GATHER` (the built-in ``weft.gather``), made
``waiting`` when the workflow starts. When the step's dependencies have ended (in the
transaction of the last one's finish, as a plain step is queued then), :func:`fan_out`
asks the definition's ``each`` for the items and starts the group, its members the
workflow owner's, with the step's run as the group's callback: the group's end (see
:mod:`django_weft.engine.flows.groups`) queues that run, which gathers the members'
results in the items' order and ends the step. So everything a step does (cancel,
abort, retry, ``ctx.upstream``, the graph's phases) holds for a group step unchanged.

A step whose items cannot be made or started is cancelled, with the reason, rather than
failing the finish that got there: that finish belongs to another run.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction

from django_weft.engine.flows.groups import add_members, retry_members, seal, start_group
from django_weft.engine.runs.starting import StartRequest
from django_weft.exceptions import WeftError
from django_weft.jobs.workflows import Step, workflows
from django_weft.live.changes import Changes
from django_weft.models import Group, Run, RunStatus, Workflow, WorkflowStep

#: The built-in job whose run is a group step's own: it gathers the members' results.
GATHER = "weft.gather"


def fan_out(workflow: Workflow, step: WorkflowStep, *, now: datetime, changes: Changes) -> str:
    """Start ``step``'s group, in the caller's transaction; "" when it started, else why
    it could not (nothing of it is then written)."""
    found = _definition_step(workflow, step.name)
    if found is None or found.each is None:
        return f"workflow {workflow.name} no longer defines step {step.name} as a group"
    try:
        items = list(found.each(workflow.args, _results(workflow, step.depends_on)))
    except Exception as error:  # the project's code: whatever it raises, the step says
        return f"its items could not be made: {error!r}"
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            return f"its item {index} is {type(item).__name__}, not a mapping"
    requests = [StartRequest(found.job, item, owner=workflow.owner) for item in items]
    try:
        with transaction.atomic():
            group, _ = start_group(
                [],
                now=now,
                changes=changes,
                owner=workflow.owner,
                name=f"{workflow.name}: {step.name}",
                sealed=False,
            )
            members = add_members(group, requests, now=now, changes=changes)
            WorkflowStep.objects.filter(pk=step.pk).update(
                group=group, members=[str(run.pk) for run in members]
            )
            Group.objects.filter(pk=group.pk).update(callback_run=step.run_id)
            seal(group, now=now, changes=changes)
    except WeftError as error:
        return f"its members could not start: {error}"
    return ""


def fan_out_again(step: WorkflowStep, gathering: Run, *, now: datetime, changes: Changes) -> None:
    """Start again the members of ``step``'s group that did not end done, in their
    places, with ``gathering`` (the step's new run) as the run the group's end queues:
    what ended done is not done again."""
    assert step.group is not None
    replaced = retry_members(step.group, callback_run=gathering, now=now, changes=changes)
    members = [
        str(replaced[uuid.UUID(member)].pk) if uuid.UUID(member) in replaced else member
        for member in step.members
    ]
    WorkflowStep.objects.filter(pk=step.pk).update(members=members)


def _definition_step(workflow: Workflow, name: str) -> Step | None:
    definition = workflows.known(workflow.name)
    if definition is None or definition.version != workflow.version:
        return None
    try:
        return definition.step(name)
    except KeyError:
        return None


def _results(workflow: Workflow, names: list[str]) -> dict[str, Any]:
    """The results of the steps ``names`` of ``workflow`` that ended done, by name."""
    found = WorkflowStep.objects.filter(workflow=workflow, name__in=names).values_list(
        "name", "run__status", "run__result"
    )
    return {name: result for name, status, result in found if status == RunStatus.DONE}

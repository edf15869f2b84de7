"""The built-in job ``weft.start_workflow``: starts a workflow, so that whatever starts
runs can start one. A schedule fires it to start a workflow on its plan (each fire one
workflow), a finish hook chains a workflow after a run, a ``django.tasks`` caller has a
name to enqueue.

Its args are ``workflow`` (a workflow the deployed code defines; another name is refused
when the schedule is saved or the run started, naming the field) and ``args`` (the
workflow's). The workflow belongs to the run's owner, and its key is the run's id: an
attempt that is retried after a lost worker finds the workflow the first attempt
started instead of starting a second. The run's result is the workflow's id.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from django_weft.jobs.context import RunContext
from django_weft.jobs.registry import job
from django_weft.jobs.workflows import workflows
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

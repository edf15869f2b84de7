"""Workflows (graphs of steps, defined in code): the trusted calls and the checked
``*_for`` ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.engine.flows import workflows
from django_weft.engine.outcomes import finishing
from django_weft.exceptions import InvalidWorkflowStep, UnknownWorkflow
from django_weft.jobs.workflows import WorkflowDefinition
from django_weft.jobs.workflows import workflows as definitions
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import AuditAction, Run, Workflow
from django_weft.operations.base import as_owner, record, require
from django_weft.operations.runs import require_start
from django_weft.timing import clocks

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


#: The fields a workflow's start may have.
WORKFLOW_FIELDS = ("workflow", "args")


@dataclass(frozen=True)
class WorkflowRequest:
    """A workflow a client asks for, checked: see :func:`parse_workflow`."""

    definition: WorkflowDefinition
    args: dict[str, Any]
    key: str | None = None


def find_workflow(name: object) -> WorkflowDefinition:
    """The workflow defined as ``name``; :class:`~django_weft.exceptions.UnknownWorkflow`
    for any other name (nothing is imported by name: only what this process defined)."""
    definition = definitions.known(name)
    if definition is None:
        raise UnknownWorkflow(str(name))
    return definition


def parse_workflow(user: User, data: object, *, key: str | None = None) -> WorkflowRequest:
    """The workflow ``user`` asks to start with ``data``: ``{"workflow": name, "args":
    {...}}``. Refuses first a user who may not start runs, then each bad field by name;
    the steps' args are checked when it starts (:func:`start_requested_workflow_for`)."""
    require_start(user)
    if not isinstance(data, Mapping):
        raise ValidationError(
            {NON_FIELD_ERRORS: [f"Expected an object, but got {type(data).__name__}."]}
        )
    errors: dict[str, list[str]] = {
        str(name): [f"Unknown field; a workflow's start accepts: {', '.join(WORKFLOW_FIELDS)}."]
        for name in data
        if name not in WORKFLOW_FIELDS
    }
    definition = None
    name = data.get("workflow")
    if not isinstance(name, str) or not name:
        errors["workflow"] = ["The name of a defined workflow."]
    else:
        try:
            definition = find_workflow(name)
        except UnknownWorkflow as error:
            errors["workflow"] = [str(error)]
    args = data.get("args", {})
    if not isinstance(args, Mapping):
        errors["args"] = ["An object of the workflow's args."]
    if errors:
        raise ValidationError(errors)
    assert definition is not None
    return WorkflowRequest(definition=definition, args=dict(args), key=key)


def start_workflow(
    definition: WorkflowDefinition | str,
    args: Mapping[str, Any] | None = None,
    *,
    owner: AbstractBaseUser | None = None,
    key: str | None = None,
) -> Workflow:
    """Start ``definition`` (or the workflow defined by that name) with ``args``, as the
    deployment (or as ``owner``): every step's run in one transaction, those with
    dependencies waiting. With ``key``, a workflow started before with that key is
    returned instead of a new one."""
    return _start(_definition(definition), args, owner=owner, key=key)[0]


astart_workflow = sync_to_async(start_workflow)


def _definition(definition: WorkflowDefinition | str) -> WorkflowDefinition:
    return find_workflow(definition) if isinstance(definition, str) else definition


def _start(
    definition: WorkflowDefinition,
    args: Mapping[str, Any] | None,
    *,
    owner: AbstractBaseUser | None,
    key: str | None,
) -> tuple[Workflow, bool]:
    changes = Changes()
    started = workflows.start_workflow(
        definition, args, now=clocks.now(), changes=changes, owner=owner, key=key
    )
    publisher.publish(changes)
    return started


def abort_workflow(workflow: Workflow) -> int:
    """Request an abort of each unfinished step of ``workflow`` and member of its group
    steps' groups; how many were asked. Runs no worker holds (waiting or queued) end at
    once; running ones at their next check. The workflow ends ``aborted`` once every
    step has ended."""
    changes = Changes()
    now = clocks.now()
    with transaction.atomic():
        # The runs' rows first, then (through each finish) the steps' and the
        # workflow's: the order a worker's finish takes them in.
        steps = list(
            Run.objects.select_for_update(of=("self",))
            .filter(
                Q(workflow_step__workflow=workflow) | Q(group__workflow_step__workflow=workflow)
            )
            .unfinished()
            .select_related("workflow_step")
            .order_by("pk")
        )
        workflows.request_abort(workflow, now)
        # The last steps first, so that each is aborted rather than cancelled by the
        # abort of a step it depends on; the groups' members after them.
        steps.sort(key=_position, reverse=True)
        asked = sum(finishing.abort(run, now=now, changes=changes) for run in steps)
    publisher.publish(changes)
    workflow.refresh_from_db()
    return asked


def _position(run: Run) -> int:
    step = getattr(run, "workflow_step", None)
    return -1 if step is None else step.position


def retry_step(workflow: Workflow, step: str) -> Run:
    """Run ``step`` of ``workflow`` again, and the steps below it that did not end done
    (see :func:`django_weft.engine.flows.workflows.retry_step`); the step's new run."""
    changes = Changes()
    run = workflows.retry_step(workflow, step, now=clocks.now(), changes=changes)
    publisher.publish(changes)
    workflow.refresh_from_db()
    return run


# Checked calls.


def start_workflow_for(
    user: User,
    definition: WorkflowDefinition | str,
    args: Mapping[str, Any] | None = None,
    *,
    key: str | None = None,
) -> Workflow:
    """:func:`start_workflow` as ``user``, who owns it and its steps' runs; needs
    ``add_run``. On the audit trail once, with the number of steps."""
    require_start(user)
    asked = WorkflowRequest(_definition(definition), dict(args or {}), key)
    return start_requested_workflow_for(user, asked)[0]


def start_requested_workflow_for(user: User, asked: WorkflowRequest) -> tuple[Workflow, bool]:
    """:func:`start_workflow_for` of what :func:`parse_workflow` read; False when its key
    named a workflow started before (returned as it is). A step whose args its job
    refuses is refused by name: ``steps.<name>``."""
    require_start(user)
    try:
        with transaction.atomic():
            workflow, started = _start(
                asked.definition, asked.args, owner=as_owner(user), key=asked.key
            )
            if started:
                record(
                    user,
                    AuditAction.WORKFLOW_START,
                    workflow,
                    text=f"Started workflow {workflow.name} of {workflow.total} steps",
                    details={"steps": workflow.total},
                )
    except InvalidWorkflowStep as error:
        raise ValidationError({f"steps.{error.step}": [error.problem]}) from error
    return workflow, started


def abort_workflow_for(user: User, workflow: Workflow) -> int:
    """:func:`abort_workflow` as ``user``: the workflow's owner or ``change_run``."""
    _require_change(user, workflow, _("abort workflow %(workflow)s"))
    with transaction.atomic():
        asked = abort_workflow(workflow)
        record(
            user,
            AuditAction.WORKFLOW_ABORT,
            workflow,
            text=f"Requested an abort of {asked} steps",
            details={"steps": asked},
        )
    return asked


def retry_step_for(user: User, workflow: Workflow, step: str) -> Run:
    """:func:`retry_step` as ``user``: the workflow's owner or ``change_run``, who may
    start runs (a retry starts one)."""
    require_start(user)
    _require_change(user, workflow, _("retry a step of workflow %(workflow)s"))
    with transaction.atomic():
        run = retry_step(workflow, step)
        record(
            user,
            AuditAction.WORKFLOW_RETRY_STEP,
            workflow,
            text=f"Retried step {step} as run {run.pk}",
            details={"step": step, "run": str(run.pk)},
        )
    return run


def _require_change(user: User, workflow: Workflow, verb: str) -> None:
    require(
        access.may_change_workflow(user, workflow),
        verb % {"workflow": workflow.pk},
        access.CHANGE_RUN,
        or_owner=True,
    )

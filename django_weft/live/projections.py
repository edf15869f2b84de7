"""What a run or a document looks like to its owner and to a guest: plain dicts.

One definition of each view, used by the REST API's serializers and by the live sockets,
so that a socket frame and an API answer never disagree. A guest sees which runs exist
and their phase: never their state (the output), result, errors, idempotency key, or the
args their job marks private. Private args are known only for the job version deployed
here: a guest sees no args at all of a run stored by another version.

Values are JSON-ready: ids and moments as strings (moments in UTC, ``Z``-suffixed).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django_weft.access import User, sees_run_in_full
from django_weft.jobs.registry import registry
from django_weft.models import Document, Group, Run, RunStatus, Workflow, WorkflowStep
from django_weft.models.schedule import PLAN_FIELDS

#: The keys of each view, in order; the API's schema describes the same ones.
#: What anyone who may list schedules sees of every schedule: when it fires and how the
#: last fire went, never its args, policies or last error (the API's guest view, and what
#: the console's schedule list lets such a viewer filter by).
GUEST_SCHEDULE_FIELDS = (
    "id",
    "name",
    "job",
    *PLAN_FIELDS,
    "enabled",
    "next_due",
    "last_status",
    "last_started",
    "last_ended",
)

GUEST_RUN_KEYS = (
    "id",
    "job",
    "phase",
    "status",
    "priority",
    "queue",
    "worker",
    "args",
    "owner",
    "schedule",
    "due",
    "created_at",
    "started_at",
    "finished_at",
    "waiting_for",
    "wake_at",
    "group",
    "workflow",
    "job_version",
    "revision",
)
OWNER_RUN_KEYS = (
    *GUEST_RUN_KEYS,
    "attempt",
    "idempotency_key",
    "abort_requested",
    "retry_at",
    "result",
    "error_type",
    "error_message",
    "error_traceback",
    "state",
    "state_revision",
)


def phase(run: Run) -> str:
    """The status, or ``blocked`` for a queued run this process's code cannot execute."""
    if run.status == RunStatus.QUEUED and registry.deployed(run.job, run.job_version) is None:
        return "blocked"
    return str(run.status)


def moment(value: datetime | None) -> str | None:
    """An aware moment as ISO 8601 in UTC with ``Z``, as the API has always written them."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def guest_run(run: Run) -> dict[str, Any]:
    """A run as anyone allowed to watch sees it. Reads ``owner`` and ``schedule``."""
    deployed = registry.deployed(run.job, run.job_version)
    return {
        "id": str(run.pk),
        "job": run.job,
        "phase": phase(run),
        "status": str(run.status),
        "priority": run.priority,
        "queue": run.queue,
        # The worker process's id (the console's worker list shows the same id): read
        # from the row itself, so no view needs a join to the workers.
        "worker": str(run.worker_id) if run.worker_id is not None else None,
        # The private args of another version are not known here: show none.
        "args": deployed.public_args(run.args) if deployed is not None else {},
        "owner": run.owner.get_username() if run.owner is not None else None,
        "schedule": run.schedule.name if run.schedule is not None else None,
        "due": moment(run.due),
        "created_at": moment(run.created_at),
        "started_at": moment(run.started_at),
        "finished_at": moment(run.finished_at),
        # What a waiting run waits for: a signal (by name), a moment, or both (a wait
        # with a timeout). Why it waits is no secret of its owner's, unlike its output.
        "waiting_for": run.awaiting or None,
        "wake_at": moment(run.wake_at),
        # The group the run is a member of: which runs exist together is no secret.
        "group": str(run.group_id) if run.group_id is not None else None,
        # The workflow the run is a step of: its graph is no secret either.
        "workflow": str(run.workflow_id) if run.workflow_id is not None else None,
        # The version of the job's code the run was started for (a queued run whose
        # version no worker deploys is blocked).
        "job_version": run.job_version,
        # Frames of one run may arrive out of order (two processes publish it): the
        # client keeps the one with the highest revision (the row's change counter).
        "revision": run.version,
    }


def owner_run(run: Run) -> dict[str, Any]:
    """A run as its owner (or an operator) sees it: everything. Reads ``state`` too."""
    state = run.state
    return {
        **guest_run(run),
        "args": run.args,
        "attempt": run.attempt,
        "idempotency_key": run.idempotency_key,
        "abort_requested": run.abort_requested_at is not None,
        "retry_at": moment(run.retry_at),
        "result": run.result,
        "error_type": run.error_type,
        "error_message": run.error_message,
        "error_traceback": run.error_traceback,
        "state": state.data if state is not None else None,
        "state_revision": state.revision if state is not None else None,
    }


def run_views(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both views of ``run``, computed once for every watcher of a change."""
    return owner_run(run), guest_run(run)


def run_for(user: User, run: Run) -> dict[str, Any]:
    """``run`` in the view ``user`` gets: in full for its owner and operators."""
    return owner_run(run) if sees_run_in_full(user, run) else guest_run(run)


def document(document: Document) -> dict[str, Any]:
    """An application document as its watchers see it."""
    return {"key": document.key, "revision": document.revision, "data": document.data}


def state(document: Document, run_id: object) -> dict[str, Any]:
    """A run's state document as the run's full watchers see a change of it."""
    return {"run": str(run_id), "revision": document.revision, "state": document.data}


def guest_group(group: Group) -> dict[str, Any]:
    """A group as anyone signed in sees it: what it is for, how far it got, and the run
    its end started; not its callbacks' args. Reads ``owner``."""
    return {
        "id": str(group.pk),
        "name": group.name,
        "owner": group.owner.get_username() if group.owner is not None else None,
        "condition": group.condition,
        "sealed": group.is_sealed,
        "ended": group.has_ended,
        **group.summary(),
        "callback_run": str(group.callback_run_id) if group.callback_run_id else None,
        "created_at": moment(group.created_at),
        "sealed_at": moment(group.sealed_at),
        "ended_at": moment(group.ended_at),
    }


def owner_group(group: Group) -> dict[str, Any]:
    """A group as its owner (or an operator) sees it: its callbacks, with their args."""
    return {
        **guest_group(group),
        "callback": {"job": group.callback_job, "args": group.callback_args}
        if group.callback_job
        else None,
        "on_failure": {"job": group.failure_job, "args": group.failure_args}
        if group.failure_job
        else None,
    }


def group_for(user: User, group: Group) -> dict[str, Any]:
    """``group`` in the view ``user`` gets: in full for its owner and operators."""
    return owner_group(group) if sees_run_in_full(user, group) else guest_group(group)


def guest_workflow(workflow: Workflow) -> dict[str, Any]:
    """A workflow as anyone signed in sees it: its graph, each step's phase and times,
    how far it got; not its args nor its steps' results or errors. Reads ``owner`` and
    its steps with their runs and groups (``steps__run``, ``steps__group``, prefetched
    where lists are built)."""
    return {
        "id": str(workflow.pk),
        "name": workflow.name,
        "version": workflow.version,
        "owner": workflow.owner.get_username() if workflow.owner is not None else None,
        "status": str(workflow.status),
        "abort_requested": workflow.abort_requested_at is not None,
        "total": workflow.total,
        "unfinished": workflow.unfinished,
        "created_at": moment(workflow.created_at),
        "ended_at": moment(workflow.ended_at),
        "callback_run": str(workflow.callback_run_id) if workflow.callback_run_id else None,
        "steps": [_guest_step(step) for step in workflow.steps.all()],
    }


def _guest_step(step: WorkflowStep) -> dict[str, Any]:
    run = step.run
    return {
        "name": step.name,
        "job": step.job,
        "after": list(step.depends_on),
        "runs_anyway": step.runs_anyway,
        "pending": step.pending,
        "run": str(run.pk) if run is not None else None,
        "phase": phase(run) if run is not None else None,
        "attempt": run.attempt if run is not None else None,
        "started_at": moment(run.started_at) if run is not None else None,
        "finished_at": moment(run.finished_at) if run is not None else None,
        "group": _step_group(step),
    }


def _step_group(step: WorkflowStep) -> dict[str, Any] | None:
    """A group step's group and how far its members got (None before it fanned out)."""
    group = step.group
    if group is None:
        return None
    return {
        "id": str(group.pk),
        "total": group.total,
        "ended": group.total - group.unfinished,
        "failed": group.failed + group.aborted + group.lost,
    }


def owner_workflow(workflow: Workflow) -> dict[str, Any]:
    """A workflow as its owner (or an operator) sees it: its args, and each step's
    result or error."""
    view = guest_workflow(workflow)
    for shown, step in zip(view["steps"], workflow.steps.all(), strict=True):
        run = step.run
        shown["result"] = run.result if run is not None else None
        shown["error_type"] = run.error_type if run is not None else ""
        shown["error_message"] = run.error_message if run is not None else ""
    return {**view, "args": workflow.args}


def workflow_for(user: User, workflow: Workflow) -> dict[str, Any]:
    """``workflow`` in the view ``user`` gets: in full for its owner and operators."""
    if sees_run_in_full(user, workflow):
        return owner_workflow(workflow)
    return guest_workflow(workflow)

"""Who may do what, checked once: the one service layer every entry point goes through.

The admin's actions, the REST API, the live sockets and a project's own views call these
functions with the acting user. Each checks permission and ownership (the rules of
:mod:`django_weft.access`), then runs the step and publishes what changed. A refusal
raises :class:`~django_weft.exceptions.Forbidden` naming the missing permission, and
writes nothing. :func:`describe_refusal` turns any refusal into the code, message and
fields every entry point shows, so none of them words a refusal on its own.

Rules beyond the model permissions (see docs/security.md):

- what runs is decided by whoever sets it: starting a run, creating a schedule, and
  changing a schedule's job or args all need ``add_run``; changing another user's
  schedule's job or args makes the editor its owner, so nobody runs a job as someone
  else;
- deleting a run needs to own it or ``delete_run``, and the run must have finished;
- signalling a run steers it as an abort does: owning it or ``change_run``; so do
  adding to a group, sealing it and aborting it (owning the group, or ``change_run``),
  and aborting a workflow or retrying its step (owning the workflow, or ``change_run``;
  a retry needs ``add_run`` too);
- a bulk retry, abort or delete judges each run on its own, as the single call does;
- *run now* and *retry* start runs, so they need ``add_run`` besides the right to act on
  the schedule or see the run in full;
- pausing a queue stops everyone's runs: it needs ``pause_queue``;
- a stored module runs as whoever calls it: only its owner or ``manage_module`` changes
  it, only ``grant_host_function`` widens its grants, and runs execute the revision its
  owner (or a module manager) approved.

Every checked call that changes something puts it on record (:func:`record`): who, when,
what, and through which entry point (:func:`entry_point`), in the same transaction as the
change. A refused call, or one that changes nothing (an abort asked again, a pause of a
paused queue), leaves no record.

Callers import from here (``operations.start_for``): the modules behind it split the
layer by what it acts on (``runs``, ``bulk`` for many runs at once, ``schedules``,
``queues``, ``workers``, ``modules``, ``documents``, ``signals``, ``groups``, ``workflows``), with
``base`` for what every checked call uses and ``refusals`` for how a refusal is
described. It is one layer and one front door, in small rooms.
"""

from __future__ import annotations

from django_weft.engine.auditing import entry_point
from django_weft.engine.runs.starting import StartRequest
from django_weft.operations.base import WHAT_RUNS, record
from django_weft.operations.bulk import (
    ACTIONS as BULK_ACTIONS,
)
from django_weft.operations.bulk import (
    MAX_IDS as MAX_BULK_IDS,
)
from django_weft.operations.bulk import (
    BulkResult,
    bulk_for,
    parse_action,
    parse_ids,
)
from django_weft.operations.documents import change_document, open_document
from django_weft.operations.groups import (
    GROUP_FIELDS,
    MAX_MEMBERS_PER_REQUEST,
    GroupRequest,
    abort_group,
    abort_group_for,
    add_to_group,
    add_to_group_for,
    astart_group,
    parse_group,
    parse_members,
    seal_group,
    seal_group_for,
    start_group,
    start_group_for,
    start_requested_group_for,
)
from django_weft.operations.limits import create_limit_for, delete_limit_for, edit_limit_for
from django_weft.operations.modules import approve_module_for, delete_module_for, save_module_for
from django_weft.operations.queues import pause_queue_for, resume_queue_for
from django_weft.operations.refusals import REFUSALS, describe_refusal
from django_weft.operations.runs import (
    JOB_NAME_LENGTH,
    QUEUE_NAME_LENGTH,
    REQUEST_ID_LENGTH,
    START_FIELDS,
    aabort,
    abort,
    abort_for,
    astart,
    astart_many,
    delete_run_for,
    parse_start,
    require_start,
    retry_for,
    start,
    start_for,
    start_many,
    start_many_for,
    start_many_or_get,
    start_or_get,
)
from django_weft.operations.schedules import (
    create_schedule_for,
    delete_schedule_for,
    edit_schedule_for,
    require_schedule_change,
    require_schedule_create,
    require_schedule_delete,
    run_now_for,
    set_enabled_for,
)
from django_weft.operations.signals import (
    SIGNAL_FIELDS,
    asend_signal,
    asend_signal_for,
    parse_signal,
    send_signal,
    send_signal_for,
)
from django_weft.operations.workers import quiet_worker_for
from django_weft.operations.workflows import (
    WORKFLOW_FIELDS,
    WorkflowRequest,
    abort_workflow,
    abort_workflow_for,
    astart_workflow,
    find_workflow,
    parse_workflow,
    retry_step,
    retry_step_for,
    start_requested_workflow_for,
    start_workflow,
    start_workflow_for,
)

__all__ = [
    "BULK_ACTIONS",
    "GROUP_FIELDS",
    "JOB_NAME_LENGTH",
    "MAX_BULK_IDS",
    "MAX_MEMBERS_PER_REQUEST",
    "QUEUE_NAME_LENGTH",
    "REFUSALS",
    "REQUEST_ID_LENGTH",
    "SIGNAL_FIELDS",
    "START_FIELDS",
    "WHAT_RUNS",
    "WORKFLOW_FIELDS",
    "BulkResult",
    "GroupRequest",
    "StartRequest",
    "WorkflowRequest",
    "aabort",
    "abort",
    "abort_for",
    "abort_group",
    "abort_group_for",
    "abort_workflow",
    "abort_workflow_for",
    "add_to_group",
    "add_to_group_for",
    "approve_module_for",
    "asend_signal",
    "asend_signal_for",
    "astart",
    "astart_group",
    "astart_many",
    "astart_workflow",
    "bulk_for",
    "change_document",
    "create_limit_for",
    "create_schedule_for",
    "delete_limit_for",
    "delete_module_for",
    "delete_run_for",
    "delete_schedule_for",
    "describe_refusal",
    "edit_limit_for",
    "edit_schedule_for",
    "entry_point",
    "find_workflow",
    "open_document",
    "parse_action",
    "parse_group",
    "parse_ids",
    "parse_members",
    "parse_signal",
    "parse_start",
    "parse_workflow",
    "pause_queue_for",
    "quiet_worker_for",
    "record",
    "require_schedule_change",
    "require_schedule_create",
    "require_schedule_delete",
    "require_start",
    "resume_queue_for",
    "retry_for",
    "retry_step",
    "retry_step_for",
    "run_now_for",
    "save_module_for",
    "seal_group",
    "seal_group_for",
    "send_signal",
    "send_signal_for",
    "set_enabled_for",
    "start",
    "start_for",
    "start_group",
    "start_group_for",
    "start_many",
    "start_many_for",
    "start_many_or_get",
    "start_or_get",
    "start_requested_group_for",
    "start_requested_workflow_for",
    "start_workflow",
    "start_workflow_for",
]

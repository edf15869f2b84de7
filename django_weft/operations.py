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
- *run now* and *retry* start runs, so they need ``add_run`` besides the right to act on
  the schedule or see the run in full;
- pausing a queue stops everyone's runs: it needs ``pause_queue``;
- a stored module runs as whoever calls it: only its owner or ``manage_module`` changes
  it, only ``grant_host_function`` widens its grants, and runs execute the revision its
  owner (or a module manager) approved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from asgiref.sync import sync_to_async
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction

from django_weft import access
from django_weft.access import User
from django_weft.engine import finishing, scheduler, starting
from django_weft.engine.schedules import edit_schedule, save_schedule
from django_weft.engine.starting import StartRequest
from django_weft.exceptions import (
    ConcurrencyLimitReached,
    Forbidden,
    IdempotencyKeyReused,
    InvalidArgs,
    InvalidIdempotencyKey,
    RunFinished,
    RunNotFinished,
    UnknownJob,
    WeftError,
)
from django_weft.jobs import revisions
from django_weft.jobs.registry import Job, registry
from django_weft.jobs.revisions import Change
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import Document, Module, ModuleRevision, PausedQueue, Run, Schedule
from django_weft.sandbox import modules
from django_weft.timing import clocks

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

#: The schedule fields whose change decides what runs (and so who it runs as).
WHAT_RUNS = ("job", "args")


def _require(allowed: bool, verb: str, permission: str, *, or_owner: bool = False) -> None:
    if not allowed:
        raise Forbidden(access.refusal(verb, permission, or_owner=or_owner), permission)


def _signed_in(user: User) -> None:
    if not user.is_authenticated:
        raise Forbidden("you must be signed in", "authentication")


def _as_owner(user: User) -> AbstractBaseUser:
    return cast("AbstractBaseUser", user)


# -- runs ------------------------------------------------------------------------------------


#: The longest request id a socket client may send; a start's is its idempotency key.
REQUEST_ID_LENGTH = 150
#: The longest job name a client may send, as the run stores it.
JOB_NAME_LENGTH = cast(int, Run._meta.get_field("job").max_length)


def parse_start(
    data: object, *, key: str | None = None, key_field: str | None = None
) -> StartRequest:
    """The start a client's ``data`` asks for: ``{"job": <name>, "args": {...}}``.

    The one check of a start's input, for the API's body and the socket's frame alike.
    ``args`` may be left out (no args). The idempotency key is ``key`` (the API's comes
    in a header) or, with ``key_field``, that field of ``data``, which is then required
    (a socket's ``request_id``). Raises ``ValidationError`` naming every bad field, then
    :class:`~django_weft.exceptions.UnknownJob` for a job this process does not have.
    The owner is left out: the checked call that starts it (:func:`start_for`) sets it.
    """
    if not isinstance(data, Mapping):
        raise ValidationError(
            {NON_FIELD_ERRORS: [f"Expected an object, but got {type(data).__name__}."]}
        )
    errors: dict[str, list[str]] = {}
    job = _text(data, "job", JOB_NAME_LENGTH, errors)
    args = data.get("args", {})
    if args is None:
        errors["args"] = ["This field may not be null."]
    elif not isinstance(args, Mapping):
        errors["args"] = [f'Expected a dictionary of items but got type "{type(args).__name__}".']
    if key_field is not None:
        key = _text(data, key_field, REQUEST_ID_LENGTH, errors)
    if errors:
        raise ValidationError(errors)
    assert job is not None
    return StartRequest(registry.get(job), args, key=key)


def _text(
    data: Mapping[str, Any], name: str, longest: int, errors: dict[str, list[str]]
) -> str | None:
    """The required text field ``name`` of ``data``, trimmed; its problem goes to ``errors``."""
    value = data.get(name)
    if name not in data:
        errors[name] = ["This field is required."]
    elif value is None:
        errors[name] = ["This field may not be null."]
    elif not isinstance(value, str):
        errors[name] = [f"Expected text, not {type(value).__name__}."]
    elif not value.strip():
        errors[name] = ["This field may not be blank."]
    elif len(value.strip()) > longest:
        errors[name] = [f"Ensure this field has no more than {longest} characters."]
    else:
        return value.strip()
    return None


# Trusted calls: the caller has decided who may do this.
def start(
    job: Job | str,
    args: Mapping[str, Any] | None = None,
    *,
    key: str | None = None,
    owner: AbstractBaseUser | None = None,
    priority: int | None = None,
) -> Run:
    """Start a run of ``job`` (a job or its name) and return it at once, queued.

    Raises :class:`~django_weft.exceptions.UnknownJob`,
    :class:`~django_weft.exceptions.InvalidArgs` and
    :class:`~django_weft.exceptions.StartRefused` (concurrency limit, reused key); then
    nothing is written. With ``key`` a resent start returns the run the first one made
    (keys are the owner's own: two owners' equal keys name two runs).
    """
    chosen = registry.get(job) if isinstance(job, str) else job
    request = StartRequest(chosen, args, key=key, owner=owner, priority=priority)
    return start_or_get(request)[0]


def start_or_get(request: StartRequest) -> tuple[Run, bool]:
    """Start the run ``request`` asks for, as :func:`start` does; also say whether this
    call made it (False: its key named a run an earlier start made)."""
    run, created = starting.start_or_get(request, now=clocks.now())
    _publish_run(run)
    return run, created


astart = sync_to_async(start)


def abort(run: Run) -> bool:
    """Request an abort. A run no worker has claimed (queued or blocked) ends at once.

    Returns False when the run had already finished, or its abort was requested before.
    """
    changes = Changes()
    requested = finishing.abort(run, now=clocks.now(), changes=changes)
    publisher.publish(changes)
    return requested


aabort = sync_to_async(abort)


def _publish_run(run: Run) -> None:
    changes = Changes()
    changes.run(run.pk)
    publisher.publish(changes)


# Checked calls: for a user whose rights are checked here.


def require_start(user: User) -> None:
    """Refuse unless ``user`` may start runs."""
    _signed_in(user)
    _require(access.may_start_runs(user), "start runs", access.ADD_RUN)


def start_for(user: User, request: StartRequest) -> tuple[Run, bool]:
    """Start ``request`` as ``user``, who owns the run; False for a resent key."""
    require_start(user)
    return start_or_get(replace(request, owner=_as_owner(user)))


def abort_for(user: User, run: Run) -> bool:
    """Request an abort of ``run``; False when it was requested before and still stands.

    Raises :class:`~django_weft.exceptions.RunFinished` for a run that has finished.
    """
    _require(
        access.may_abort_run(user, run),
        f"abort run {run.pk}",
        access.CHANGE_RUN,
        or_owner=True,
    )
    if abort(run):
        return True
    run.refresh_from_db(fields=["status"])
    if run.is_finished:
        raise RunFinished(run.pk, run.status)
    return False


def retry_for(user: User, run: Run) -> Run:
    """A new run of ``run``'s job with its args, started by (and owned by) ``user``.

    Needs to see the run in full (its args are reused) and to start runs; the run must
    have finished.
    """
    _require(
        access.sees_run_in_full(user, run),
        f"retry run {run.pk}",
        access.VIEW_RUN,
        or_owner=True,
    )
    if not run.is_finished:
        raise RunNotFinished(run.pk, run.status)
    again = StartRequest(registry.get(run.job), run.args, priority=run.priority)
    return start_for(user, again)[0]


# -- schedules -------------------------------------------------------------------------------


def run_now_for(user: User, schedule: Schedule) -> Run:
    """Start ``schedule``'s job now, outside its plan, as the schedule's owner."""
    require_schedule_change(user, schedule, "run now")
    require_start(user)
    run = scheduler.run_now(schedule, now=clocks.now())
    _publish_run(run)
    return run


def require_schedule_create(user: User) -> None:
    """Refuse unless ``user`` may create schedules (which start runs as theirs)."""
    _signed_in(user)
    _require(user.has_perm(access.ADD_SCHEDULE), "create schedules", access.ADD_SCHEDULE)
    _require(access.may_start_runs(user), "create schedules", access.ADD_RUN)


def require_schedule_change(user: User, schedule: Schedule, verb: str = "change") -> None:
    """Refuse unless ``user`` may change ``schedule`` (its owner, or change_schedule)."""
    _require(
        access.may(user, access.CHANGE_SCHEDULE, schedule),
        f"{verb} schedule {schedule.name}",
        access.CHANGE_SCHEDULE,
        or_owner=True,
    )


def require_schedule_delete(user: User, schedule: Schedule) -> None:
    _require(
        access.may(user, access.DELETE_SCHEDULE, schedule),
        f"delete schedule {schedule.name}",
        access.DELETE_SCHEDULE,
        or_owner=True,
    )


def create_schedule_for(user: User, fields: Mapping[str, Any]) -> Schedule:
    """A new schedule owned by ``user``, validated against the deployed code."""
    require_schedule_create(user)
    schedule = Schedule(**{**fields, "owner": user})
    return save_schedule(schedule)


def edit_schedule_for(user: User, schedule: Schedule, changes: Mapping[str, Any]) -> Schedule:
    """Apply ``changes`` (field values) to ``schedule`` and save it, validated.

    A change of its job or args needs ``add_run``, and makes ``user`` the owner when it
    was someone else's.
    """
    require_schedule_change(user, schedule)
    if "owner" in changes:
        raise Forbidden("a schedule's owner is who sets what it runs; it is not edited", "owner")
    what_runs = [
        name for name in WHAT_RUNS if name in changes and changes[name] != getattr(schedule, name)
    ]
    if what_runs:
        _require(
            access.may_start_runs(user),
            f"change what schedule {schedule.name} runs",
            access.ADD_RUN,
        )
    if what_runs and not access.owns(user, schedule):
        changes = {**changes, "owner": user}  # AUTH_USER_MODEL, whatever class it is
    return edit_schedule(schedule, changes)


def delete_schedule_for(user: User, schedule: Schedule) -> None:
    """Delete ``schedule``; its runs are kept."""
    require_schedule_delete(user, schedule)
    schedule.delete()


def set_enabled_for(user: User, schedules: Iterable[Schedule], enabled: bool) -> int:
    """Switch ``schedules`` on or off; all or none (a refused one writes nothing)."""
    chosen = list(schedules)
    for schedule in chosen:
        require_schedule_change(user, schedule, "enable" if enabled else "disable")
    rows = Schedule.objects.filter(pk__in=[schedule.pk for schedule in chosen])
    if enabled:
        return rows.enable()
    return rows.filter(enabled=True).update(enabled=False)


# -- queues ----------------------------------------------------------------------------------


def pause_queue_for(user: User, queue: str) -> bool:
    """Pause ``queue`` for every worker; False when it was paused already."""
    _require(user.has_perm(access.PAUSE_QUEUE), f"pause queue {queue}", access.PAUSE_QUEUE)
    _, created = PausedQueue.objects.get_or_create(
        queue=queue,
        defaults={
            "paused_at": clocks.now(),
            "paused_by": cast(Any, user) if user.is_authenticated else None,
        },
    )
    return created


def resume_queue_for(user: User, queue: str) -> bool:
    """Resume ``queue``; False when it was not paused."""
    _require(user.has_perm(access.PAUSE_QUEUE), f"resume queue {queue}", access.PAUSE_QUEUE)
    deleted, _ = PausedQueue.objects.filter(queue=queue).delete()
    return bool(deleted)


# -- modules ---------------------------------------------------------------------------------


def save_module_for(user: User, module: Module) -> Module:
    """Save ``module`` (new, or a stored one with its fields changed) as its next revision.

    A new module needs ``add_module`` and is ``user``'s; someone else's needs
    ``manage_module``. A grant the approved revision does not have needs
    ``grant_host_function``. The owner's save is approved at once; anyone else's waits
    for :func:`approve_module_for`, and runs go on executing the approved revision.
    """
    _signed_in(user)
    with transaction.atomic():
        if module.pk is None:
            _require(user.has_perm(access.ADD_MODULE), "add stored modules", access.ADD_MODULE)
            module.owner, approved = _as_owner(user), None
        else:
            stored = _locked_module(module, user, "change")
            module.owner_id, approved = stored.owner_id, stored.approved  # not edited
        modules.validate_module(module)
        _require_grants(user, module.grants, approved)
        approve = access.owns(user, module)
        return modules.save_revision(module, author=_as_owner(user), approve=approve)


def approve_module_for(user: User, module: Module, revision: int) -> bool:
    """Make ``revision`` (a number in ``module``'s history) the one its runs execute.

    Needs to own the module or ``manage_module``, and ``grant_host_function`` for a grant
    the approved revision does not have. False when it was approved already.
    """
    with transaction.atomic():
        stored = _locked_module(module, user, "approve")
        chosen = stored.revisions.filter(revision=revision).first()
        if chosen is None:
            raise ValidationError({"revision": [f"{stored} has no revision {revision}."]})
        if errors := modules.grant_errors(chosen.grants):
            raise ValidationError({"grants": errors})
        _require_grants(user, chosen.grants, stored.approved)
        approved = modules.approve_revision(stored, chosen, by=_as_owner(user), at=clocks.now())
    module.approved = stored.approved
    return approved


def delete_module_for(user: User, module: Module) -> None:
    """Delete ``module``: its owner or ``manage_module``, since a module created again
    under its name would run for everyone who calls it."""
    with transaction.atomic():
        _locked_module(module, user, "delete").delete()


def _locked_module(module: Module, user: User, verb: str) -> Module:
    """``module`` as stored, locked until the caller's transaction ends, once ``user``
    may ``verb`` it (its owner, or ``manage_module``): judged by the row, not by what the
    caller's copy says."""
    stored = Module.objects.select_for_update().get(pk=module.pk)
    _require(
        access.may_manage_module(user, stored),
        f'{verb} stored module "{stored}"',
        access.MANAGE_MODULE,
        or_owner=True,
    )
    return stored


def _require_grants(user: User, grants: list[str], approved: ModuleRevision | None) -> None:
    """Refuse grants beyond ``approved``'s unless ``user`` may grant, naming each one."""
    added = [name for name in grants if approved is None or name not in approved.grants]
    if added:
        names = ", ".join(f'"{name}"' for name in added)
        _require(
            access.may_grant_host_functions(user), f"grant {names}", access.GRANT_HOST_FUNCTION
        )


# -- documents -------------------------------------------------------------------------------


def open_document(
    key: str, *, schema: str, version: int = 1, initial: Callable[[], dict[str, Any]] = dict
) -> Document:
    """The document at ``key``, created with ``initial()`` if it does not exist yet."""
    return revisions.open_document(key, schema=schema, version=version, initial=initial)


def change_document(document: Document, change: Change, *, attempts: int = 20) -> Document:
    """Apply ``change`` to the document's data, commit it as the next revision, and publish.

    See :func:`django_weft.jobs.revisions.change_document`.
    """
    changed = revisions.change_document(document, change, attempts=attempts)
    changes = Changes()
    changes.document(changed.pk)
    publisher.publish(changes)
    return changed


# -- refusals --------------------------------------------------------------------------------


def describe_refusal(error: WeftError | ValidationError) -> tuple[str, str, dict[str, list[str]]]:
    """``(code, message, fields)`` of a refusal, as every entry point shows it.

    ``code`` is ``invalid`` (bad input; ``fields`` names each bad field), ``forbidden``,
    ``finished``, ``not_finished``, ``concurrency_limit``, ``idempotency_key_reused``,
    or ``refused`` for any other refusal.
    """
    if isinstance(error, ValidationError):
        return "invalid", "invalid input", dict(error.message_dict)
    if isinstance(error, UnknownJob):
        return "invalid", str(error), {"job": [str(error)]}
    if isinstance(error, InvalidArgs):
        fields = {f"args.{name}": messages for name, messages in error.errors.items()}
        return "invalid", str(error), fields
    if isinstance(error, InvalidIdempotencyKey):
        return "invalid", str(error), {"key": [str(error)]}
    if isinstance(error, Forbidden):
        return "forbidden", str(error), {}
    if isinstance(error, RunFinished):
        return "finished", str(error), {}
    if isinstance(error, RunNotFinished):
        return "not_finished", str(error), {}
    if isinstance(error, ConcurrencyLimitReached):
        return "concurrency_limit", str(error), {}
    if isinstance(error, IdempotencyKeyReused):
        return "idempotency_key_reused", str(error), {}
    return "refused", str(error), {}


#: Refusals :func:`describe_refusal` knows; entry points catch these and nothing else.
REFUSALS = (WeftError, ValidationError)

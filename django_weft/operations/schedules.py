"""Running a schedule now, creating, editing, switching and deleting schedules, checked.

A schedule whose owner's user was deleted (``owner_removed``) fires nothing until someone
takes it over, and whoever does becomes its owner: enabling it (the admin's *enable* and
*resume*, its form, the API's ``enabled``, :func:`set_enabled_for`) or changing what it
runs. Its runs start as that user from then on, so the take-over needs what a start of
them needs (:func:`require_take_over`), and is on record as such.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.engine.schedules import scheduler
from django_weft.engine.schedules.saving import edit_schedule, save_schedule, validate_job_args
from django_weft.exceptions import (
    Forbidden,
)
from django_weft.models import (
    AuditAction,
    Run,
    Schedule,
)
from django_weft.operations.base import WHAT_RUNS, as_owner, record, require, signed_in
from django_weft.operations.runs import publish_run, require_start
from django_weft.timing import clocks


def run_now_for(user: User, schedule: Schedule) -> Run:
    """Start ``schedule``'s job now, outside its plan, as the schedule's owner."""
    require_schedule_change(user, schedule, _("run now schedule %(name)s"))
    require_start(user)
    with transaction.atomic():
        run = scheduler.run_now(schedule, now=clocks.now())
        made = {"run": str(run.pk)}
        record(user, AuditAction.RUN_NOW, schedule, text=f"Ran now: run {run.pk}", details=made)
    publish_run(run)
    return run


def require_schedule_create(user: User) -> None:
    """Refuse unless ``user`` may create schedules (which start runs as theirs)."""
    signed_in(user)
    verb = _("create schedules")
    require(user.has_perm(access.ADD_SCHEDULE), verb, access.ADD_SCHEDULE)
    require(access.may_start_runs(user), verb, access.ADD_RUN)


def require_schedule_change(user: User, schedule: Schedule, verb: str = "") -> None:
    """Refuse unless ``user`` may change ``schedule`` (its owner, or change_schedule);
    ``verb`` words what is refused, with ``%(name)s`` for the schedule's name."""
    require(
        access.may(user, access.CHANGE_SCHEDULE, schedule),
        (verb or _("change schedule %(name)s")) % {"name": schedule.name},
        access.CHANGE_SCHEDULE,
        or_owner=True,
    )


def require_schedule_delete(user: User, schedule: Schedule) -> None:
    require(
        access.may(user, access.DELETE_SCHEDULE, schedule),
        _("delete schedule %(name)s") % {"name": schedule.name},
        access.DELETE_SCHEDULE,
        or_owner=True,
    )


def require_take_over(
    user: User, schedule: Schedule, job: str | None = None, args: Any = None
) -> None:
    """Refuse unless ``user`` may become the owner of ``schedule``, whose owner's user was
    deleted: its runs will start as ``user``, so ``user`` needs what a start of them needs,
    ``add_run``, and whatever its args ask of their owner (the use of a stored module they
    call, as :func:`~django_weft.access.may_use_module` says, which the job's args check
    asks). ``job`` and ``args`` are what it will run (default: what it runs now).

    Args that are bad whoever runs them are a ``ValidationError`` naming the field; args
    refused only as ``user``'s are a refusal of the take-over naming the problem.
    """
    verb = _(
        "take over schedule %(name)s, whose owner was removed: whoever enables it becomes its owner"
    ) % {"name": schedule.name}
    require(access.may_start_runs(user), verb, access.ADD_RUN)
    job = schedule.job if job is None else job
    args = schedule.args if args is None else args
    validate_job_args(job, args)
    try:
        validate_job_args(job, args, owner=as_owner(user))
    except ValidationError as error:
        problem = "; ".join(message.rstrip(".") for message in error.messages)
        refusal = _("you may not %(verb)s, and its args are refused for you (%(problem)s)")
        raise Forbidden(refusal % {"verb": verb, "problem": problem}, "args") from None


def _record_take_over(user: User, schedule: Schedule) -> None:
    name = as_owner(user).get_username()
    record(
        user,
        AuditAction.SCHEDULE_TAKE_OVER,
        schedule,
        text=f"Took over (its owner was removed): its runs start as {name}",
        changed=["owner"],
        details={"owner": name},
    )


def create_schedule_for(user: User, fields: Mapping[str, Any]) -> Schedule:
    """A new schedule owned by ``user``, validated against the deployed code."""
    require_schedule_create(user)
    schedule = Schedule(**{**fields, "owner": user})
    with transaction.atomic():
        save_schedule(schedule)
        record(user, AuditAction.SCHEDULE_CREATE, schedule, text="Created")
    return schedule


def edit_schedule_for(user: User, schedule: Schedule, changes: Mapping[str, Any]) -> Schedule:
    """Apply ``changes`` (field values) to ``schedule`` and save it, validated.

    A change of its job or args needs ``add_run``, and makes ``user`` the owner when it
    was someone else's. For a schedule whose owner was removed, such a change, or
    ``enabled`` sent as True, takes it over (:func:`require_take_over`).
    """
    require_schedule_change(user, schedule)
    if "owner" in changes:
        raise Forbidden(_("a schedule's owner is who sets what it runs; it is not edited"), "owner")
    what_runs = [
        name for name in WHAT_RUNS if name in changes and changes[name] != getattr(schedule, name)
    ]
    if what_runs:
        require(
            access.may_start_runs(user),
            _("change what schedule %(name)s runs") % {"name": schedule.name},
            access.ADD_RUN,
        )
    taking_over = schedule.owner_removed and (bool(what_runs) or changes.get("enabled") is True)
    if taking_over:
        require_take_over(
            user, schedule, changes.get("job", schedule.job), changes.get("args", schedule.args)
        )
    if taking_over or (what_runs and not access.owns(user, schedule)):
        changes = {**changes, "owner": user}  # AUTH_USER_MODEL, whatever class it is
    loaded = {name: getattr(schedule, name) for name in changes}
    with transaction.atomic():
        edited = edit_schedule(schedule, changes)
        changed = [name for name, value in loaded.items() if getattr(edited, name) != value]
        if changed:
            text = f"Changed {', '.join(changed)}"
            record(user, AuditAction.SCHEDULE_EDIT, edited, text=text, changed=changed)
        if taking_over:
            _record_take_over(user, edited)
    return edited


def delete_schedule_for(user: User, schedule: Schedule) -> None:
    """Delete ``schedule``; its runs are kept."""
    require_schedule_delete(user, schedule)
    with transaction.atomic():
        record(user, AuditAction.SCHEDULE_DELETE, schedule, text="Deleted")
        schedule.delete()


def set_enabled_for(user: User, schedules: Iterable[Schedule], enabled: bool) -> int:
    """Switch ``schedules`` on or off; all or none (a refused one writes nothing).

    Each is judged as stored (read and locked here). Enabling one whose owner's user was
    deleted takes it over: ``user`` becomes its owner (:func:`require_take_over`), and
    it fires from now on as ``user``. Returns how many were switched on or taken over
    (off, when ``enabled`` is False).
    """
    verb = _("enable schedule %(name)s") if enabled else _("disable schedule %(name)s")
    with transaction.atomic():
        rows = Schedule.objects.filter(pk__in=[schedule.pk for schedule in schedules])
        stored = list(rows.select_for_update().order_by("pk"))
        for schedule in stored:
            require_schedule_change(user, schedule, verb)
        if not enabled:
            switched = [schedule for schedule in stored if schedule.enabled]
            count = rows.filter(enabled=True).update(enabled=False)
            for schedule in switched:
                record(user, AuditAction.SCHEDULE_DISABLE, schedule, text="Disabled")
            return count
        orphans = [schedule for schedule in stored if schedule.owner_removed]
        for schedule in orphans:
            require_take_over(user, schedule)
        switched = [schedule for schedule in stored if not schedule.enabled]
        taken = rows.filter(pk__in=[schedule.pk for schedule in orphans]).update(
            owner=as_owner(user), owner_removed=False, enabled=True, armed=False, next_due=None
        )
        count = taken + rows.enable()  # the orphans are enabled and owned by now
        for schedule in switched:
            record(user, AuditAction.SCHEDULE_ENABLE, schedule, text="Enabled")
        for schedule in orphans:
            _record_take_over(user, schedule)
    return count

"""Running a schedule now, creating, editing, switching and deleting schedules, checked."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.engine import scheduler
from django_weft.engine.schedules import edit_schedule, save_schedule
from django_weft.exceptions import (
    Forbidden,
)
from django_weft.models import (
    AuditAction,
    Run,
    Schedule,
)
from django_weft.operations.base import WHAT_RUNS, record, require, signed_in
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
    was someone else's.
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
    if what_runs and not access.owns(user, schedule):
        changes = {**changes, "owner": user}  # AUTH_USER_MODEL, whatever class it is
    loaded = {name: getattr(schedule, name) for name in changes}
    with transaction.atomic():
        edited = edit_schedule(schedule, changes)
        changed = [name for name, value in loaded.items() if getattr(edited, name) != value]
        if changed:
            text = f"Changed {', '.join(changed)}"
            record(user, AuditAction.SCHEDULE_EDIT, edited, text=text, changed=changed)
    return edited


def delete_schedule_for(user: User, schedule: Schedule) -> None:
    """Delete ``schedule``; its runs are kept."""
    require_schedule_delete(user, schedule)
    with transaction.atomic():
        record(user, AuditAction.SCHEDULE_DELETE, schedule, text="Deleted")
        schedule.delete()


def set_enabled_for(user: User, schedules: Iterable[Schedule], enabled: bool) -> int:
    """Switch ``schedules`` on or off; all or none (a refused one writes nothing)."""
    chosen = list(schedules)
    for schedule in chosen:
        require_schedule_change(
            user,
            schedule,
            _("enable schedule %(name)s") if enabled else _("disable schedule %(name)s"),
        )
    action = AuditAction.SCHEDULE_ENABLE if enabled else AuditAction.SCHEDULE_DISABLE
    with transaction.atomic():
        rows = Schedule.objects.filter(pk__in=[schedule.pk for schedule in chosen])
        switched = list(rows.select_for_update().filter(enabled=not enabled))
        count = rows.enable() if enabled else rows.filter(enabled=True).update(enabled=False)
        for schedule in switched:
            record(user, action, schedule, text="Enabled" if enabled else "Disabled")
    return count

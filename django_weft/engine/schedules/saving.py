"""Writing schedules: checked against the deployed code, and re-armed when their plan is edited.

The model checks its own plan on every save; whether the job it names is deployed, and
whether its args pass that job's serializer, depends on the code of the process, so it is
checked here: by every entry point that writes schedules (the admin, the API,
:mod:`django_weft.operations`), and again by the scheduler at every fire.

An edit (:func:`edit_schedule`) writes only the fields it changes and tells from what it
changes whether the row re-arms, so the schedule it returns is the row as stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction

from django_weft.exceptions import InvalidArgs, UnknownJob
from django_weft.jobs.registry import Job, registry
from django_weft.models import Schedule
from django_weft.models.schedule import PLAN_FIELDS

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

#: What an edit compares to tell whether the row re-arms: its plan, and whether it is on
#: (a row switched back on is armed from now, so it does not fire what it missed).
REARMING_FIELDS = (*PLAN_FIELDS, "enabled")


def job_and_args(schedule: Schedule) -> tuple[Job, dict[str, Any]]:
    """The deployed job ``schedule`` names, and its args in their stored form.

    Raises :class:`~django_weft.exceptions.UnknownJob` or
    :class:`~django_weft.exceptions.InvalidArgs`.
    """
    job = registry.get(schedule.job)
    return job, job.validate_args(schedule.args, owner=schedule.owner)


def validate_job_args(
    job_name: str, args: Any, *, owner: AbstractBaseUser | None = None
) -> dict[str, Any]:
    """``args`` as stored for the job named ``job_name``, run as ``owner``;
    ``ValidationError`` naming ``job`` (not deployed) or ``args`` (each bad arg) otherwise."""
    try:
        return registry.get(job_name).validate_args(args, owner=owner)
    except UnknownJob as error:
        message = str(error)
        raise ValidationError({"job": [f"{message[:1].upper()}{message[1:]}."]}) from None
    except InvalidArgs as error:
        raise ValidationError(
            {"args": [f"{field}: {' '.join(msgs)}" for field, msgs in error.errors.items()]}
        ) from None


def validate_schedule(schedule: Schedule) -> None:
    """Raise ``ValidationError`` naming every field that makes ``schedule`` unschedulable.

    The plan's fields (as :meth:`Schedule.validate_plan` names them) and ``job`` or
    ``args``. Valid args are normalised to the form they are stored in.
    """
    errors: dict[str, list[str]] = {}
    try:
        schedule.validate_plan()
    except ValidationError as error:
        errors.update(error.message_dict)
    try:
        schedule.args = validate_job_args(schedule.job, schedule.args, owner=schedule.owner)
    except ValidationError as error:
        errors.update(error.message_dict)
    if errors:
        raise ValidationError(errors)


def save_schedule(schedule: Schedule, **save_options: Any) -> Schedule:
    """Validate ``schedule`` against the deployed code and save it; nothing is written
    when it is refused."""
    validate_schedule(schedule)
    with transaction.atomic():
        schedule.save(**save_options)
    return schedule


def edit_schedule(schedule: Schedule, changes: Mapping[str, Any]) -> Schedule:
    """Apply ``changes`` (field values) to the stored ``schedule``, validated, and write them.

    Only the fields named are written, so an edit cannot roll back what the scheduler
    wrote since ``schedule`` was read. One that changes the plan, or switches the row on
    or off, re-arms it from now: ``armed`` and ``next_due`` are cleared in the same write
    (the database's trigger would clear them too; this way the returned row says so).
    """
    loaded = {name: getattr(schedule, name) for name in REARMING_FIELDS}
    for name, value in changes.items():
        setattr(schedule, name, value)
    validate_schedule(schedule)  # reads the plan as stored: "0:15:00" is a timedelta now
    written = {*changes, "updated_at"}
    if any(getattr(schedule, name) != value for name, value in loaded.items()):
        schedule.armed, schedule.next_due = False, None
        written |= {"armed", "next_due"}
    schedule.save(update_fields=written)
    return schedule

"""A schedule against the deployed code: its job must exist and its args must validate.

The model checks its own plan on every save; whether the job it names is deployed, and
whether its args pass that job's serializer, depends on the code of the process, so it is
checked here: by every entry point that writes schedules (the admin, the API,
:mod:`django_weft.operations`), and again by the scheduler at every fire.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from django_weft.exceptions import InvalidArgs, UnknownJob
from django_weft.jobs.registry import Job, registry
from django_weft.models import Schedule


def job_and_args(schedule: Schedule) -> tuple[Job, dict[str, Any]]:
    """The deployed job ``schedule`` names, and its args in their stored form.

    Raises :class:`~django_weft.exceptions.UnknownJob` or
    :class:`~django_weft.exceptions.InvalidArgs`.
    """
    job = registry.get(schedule.job)
    return job, job.validate_args(schedule.args)


def validate_job_args(job_name: str, args: Any) -> dict[str, Any]:
    """``args`` as stored for the job named ``job_name``; ``ValidationError`` naming
    ``job`` (not deployed) or ``args`` (each bad arg) otherwise."""
    try:
        return registry.get(job_name).validate_args(args)
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
        schedule.args = validate_job_args(schedule.job, schedule.args)
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

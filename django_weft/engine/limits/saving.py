"""A flow limit checked against the deployed code and written, or refused whole."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from django_weft.jobs.limits import LIMIT_NAME
from django_weft.jobs.registry import registry
from django_weft.models import FlowLimit

#: The fields an operator sets; the others are the row's own.
EDITABLE = ("name", "job", "queue", "per_key", "concurrency", "rate", "period")


def validate_limit(limit: FlowLimit) -> None:
    """Raise ``ValidationError`` naming each field of ``limit`` that is wrong: the
    model's own checks, a name a metric's label and a URL can carry, a job the code
    deploys, a scope, something limited, a rate with a positive period."""
    errors: dict[str, list[str]] = {}
    try:
        limit.full_clean(validate_constraints=False)
    except ValidationError as error:
        errors.update(error.message_dict)
    if limit.name and not LIMIT_NAME.match(limit.name):
        errors.setdefault("name", []).append(
            "A letter, digit or _, then up to 99 of those or . : -"
        )
    if limit.job and limit.job not in registry:
        errors.setdefault("job", []).append(f'No job named "{limit.job}" is registered.')
    if not limit.job and not limit.queue:
        errors.setdefault("job", []).append("Name a job, a queue, or both.")
    if limit.concurrency is None and limit.rate is None:
        errors.setdefault("concurrency", []).append("Give a concurrency, a rate, or both.")
    for name in ("concurrency", "rate"):
        if getattr(limit, name) is not None and getattr(limit, name) < 1:
            errors.setdefault(name, []).append("Give at least 1.")
    if (limit.rate is None) != (limit.period is None):
        errors.setdefault("period", []).append("A rate needs its period, and a period its rate.")
    elif limit.period is not None and limit.period.total_seconds() <= 0:
        errors.setdefault("period", []).append("Give a positive period.")
    if errors:
        raise ValidationError(errors)


def save_limit(limit: FlowLimit, changes: Mapping[str, Any] | None = None) -> list[str]:
    """Apply ``changes`` to ``limit``, validate it and write it; the names of the fields
    that changed (every field, for a new row). Nothing is written when it is refused."""
    loaded = {name: getattr(limit, name) for name in EDITABLE}
    for name, value in (changes or {}).items():
        if name not in EDITABLE:
            raise ValidationError({name: ["Unknown field; a limit has " + ", ".join(EDITABLE)]})
        setattr(limit, name, value)
    validate_limit(limit)
    changed = [
        name for name in EDITABLE if limit._state.adding or getattr(limit, name) != loaded[name]
    ]
    with transaction.atomic():
        limit.save()
    return changed

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
EDITABLE = (
    "name",
    "job",
    "queue",
    "per_key",
    "concurrency",
    "rate",
    "period",
    "fair_share",
    "weights",
)

#: The largest weight a key may have in a fair share.
MAX_WEIGHT = 1000


def validate_limit(limit: FlowLimit) -> None:
    """Raise ``ValidationError`` naming each field of ``limit`` that is wrong: the
    model's own checks, a name a metric's label and a URL can carry, a job the code
    deploys, a scope, something limited, a rate with a positive period, a fair share of a
    queue with whole positive weights."""
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
    if limit.concurrency is None and limit.rate is None and not limit.fair_share:
        errors.setdefault("concurrency", []).append("Give a concurrency, a rate or a fair share.")
    if limit.fair_share and (limit.job or not limit.queue):
        errors.setdefault("fair_share", []).append(
            "A fair share is a queue's, for every job in it: name the queue, not a job."
        )
    for problem in _weight_problems(limit):
        errors.setdefault("weights", []).append(problem)
    for name in ("concurrency", "rate"):
        if getattr(limit, name) is not None and getattr(limit, name) < 1:
            errors.setdefault(name, []).append("Give at least 1.")
    if (limit.rate is None) != (limit.period is None):
        errors.setdefault("period", []).append("A rate needs its period, and a period its rate.")
    elif limit.period is not None and limit.period.total_seconds() <= 0:
        errors.setdefault("period", []).append("Give a positive period.")
    if errors:
        raise ValidationError(errors)


def _weight_problems(limit: FlowLimit) -> list[str]:
    weights = limit.weights
    if weights in (None, {}):
        return []
    if not limit.fair_share:
        return ["Weights are a fair share's: set fair_share, or give no weights."]
    if not isinstance(weights, dict):
        return ['Give an object of keys and their weights, e.g. {"tenant-7": 3}.']
    return [
        f"The weight of {key!r} must be a whole number from 1 to {MAX_WEIGHT}, not {weight!r}."
        for key, weight in weights.items()
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= MAX_WEIGHT
    ]


def save_limit(limit: FlowLimit, changes: Mapping[str, Any] | None = None) -> list[str]:
    """Apply ``changes`` to ``limit``, validate it and write it; the names of the fields
    that changed (every field, for a new row). Nothing is written when it is refused."""
    loaded = {name: getattr(limit, name) for name in EDITABLE}
    for name, value in (changes or {}).items():
        if name not in EDITABLE:
            raise ValidationError({name: ["Unknown field; a limit has " + ", ".join(EDITABLE)]})
        setattr(limit, name, value)
    if limit.weights is None:  # the console's form gives None for an empty box
        limit.weights = {}
    validate_limit(limit)
    changed = [
        name for name in EDITABLE if limit._state.adding or getattr(limit, name) != loaded[name]
    ]
    with transaction.atomic():
        limit.save()
    return changed

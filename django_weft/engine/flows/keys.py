"""A flow's own row (a group, a workflow) written once per idempotency key.

A start with a key the owner used before gets the row that start made; two starts with
one key at the same moment both insert, and the unique constraint on the key lets one
win: the other gets the winner's row, as a keyed run's start does.
"""

from __future__ import annotations

from typing import TypeVar

from django.db import IntegrityError, transaction

from django_weft.models import Group, Workflow

Keyed = TypeVar("Keyed", Group, Workflow)


def started_before(model: type[Keyed], stored_key: str | None) -> Keyed | None:
    """The row a start with ``stored_key`` made before, if any (none without a key)."""
    if stored_key is None:
        return None
    return model.objects.filter(idempotency_key=stored_key).first()


def insert_keyed(row: Keyed) -> tuple[Keyed, bool]:
    """Insert ``row``, or return the row another start with its key inserted first, and
    False; in a savepoint, so that losing the race leaves the caller's transaction whole."""
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        winner = started_before(type(row), row.idempotency_key)
        if winner is None:
            raise
        return winner, False
    return row, True

"""Application documents for a project's own code: opened, changed, and published."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from django_weft.access import User
from django_weft.jobs import revisions
from django_weft.jobs.revisions import Change
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import (
    AuditAction,
    Document,
)
from django_weft.operations.base import record


def open_document(
    key: str, *, schema: str, version: int = 1, initial: Callable[[], dict[str, Any]] = dict
) -> Document:
    """The document at ``key``, created with ``initial()`` if it does not exist yet."""
    return revisions.open_document(key, schema=schema, version=version, initial=initial)


def change_document(
    document: Document, change: Change, *, attempts: int = 20, by: User | None = None
) -> Document:
    """Apply ``change`` to the document's data, commit it as the next revision, and publish.

    See :func:`django_weft.jobs.revisions.change_document`. A change made for a user
    (``by``) is on record as theirs; code's own bookkeeping (a job's ledger) is not.
    """
    with transaction.atomic():
        changed = revisions.change_document(document, change, attempts=attempts)
        if by is not None:
            revision = {"revision": changed.revision}
            text = f"Changed to revision {changed.revision}"
            record(by, AuditAction.DOCUMENT_CHANGE, changed, text=text, details=revision)
    changes = Changes()
    changes.document(changed.pk)
    publisher.publish(changes)
    return changed

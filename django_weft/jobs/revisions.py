"""Document revisions: JSON rows changed one revision at a time.

A change reads the document, applies a function to a copy of its data and writes it
back with a conditional update on the revision it read. If another writer got there
first the update matches no row and the change is applied again to the newer data,
so no update is ever lost. Each change is one commit. Data holding a NUL character is
refused before it is written, naming where (:class:`InvalidDocument`), on every database.

This is the step; :mod:`django_weft.operations` is the same with the change published to
the live views, for a project's own code.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from django_weft.jobs.storable import Unstorable, find_unstorable
from django_weft.models import Document
from django_weft.timing import clocks

Change = Callable[[dict[str, Any]], dict[str, Any] | None]


class DocumentConflict(RuntimeError):
    """A change kept losing to other writers and gave up."""


class InvalidDocument(ValueError):
    """Data a document cannot store (a NUL character): refused at the change that made it."""

    def __init__(self, key: str, found: Unstorable) -> None:
        self.key = key
        self.where = found.where
        super().__init__(
            f'document "{key}" cannot store this change: {found.where}: {found.problem}'
        )


def storable(key: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data``, if the document at ``key`` can store it; :class:`InvalidDocument` if not."""
    found = find_unstorable(data, "data")
    if found is not None:
        raise InvalidDocument(key, found)
    return data


def open_document(
    key: str, *, schema: str, version: int = 1, initial: Callable[[], dict[str, Any]] = dict
) -> Document:
    """The document at ``key``, created with ``initial()`` if it does not exist yet."""
    document, _ = Document.objects.get_or_create(
        key=key, defaults={"schema": schema, "version": version, "data": storable(key, initial())}
    )
    return document


def change_document(document: Document, change: Change, *, attempts: int = 20) -> Document:
    """Apply ``change`` to the document's data and commit it as the next revision.

    ``change`` gets a deep copy of the data to edit in place, or returns a new dict.
    ``document`` is refreshed with what was stored. Data holding a NUL character is
    refused (:class:`InvalidDocument`) and nothing is written.
    """
    for _ in range(attempts):
        draft = copy.deepcopy(document.data)
        replaced = change(draft)
        data = storable(document.key, draft if replaced is None else replaced)
        won = Document.objects.filter(pk=document.pk, revision=document.revision).update(
            data=data, revision=document.revision + 1, updated_at=clocks.now()
        )
        if won:
            document.data, document.revision = data, document.revision + 1
            return document
        document.refresh_from_db(fields=["data", "revision"])
    raise DocumentConflict(f"document {document.key} changed {attempts} times under this change")

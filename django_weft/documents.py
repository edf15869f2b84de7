"""Documents for a project's own code: open one, change it, and the live views hear it.

:mod:`django_weft.revisions` does the revision-checked writes; these functions add the
publishing, after the commit, to the sockets that watch the document. Inside a job use
``ctx.state`` for the run's own state, and these for application documents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django_weft import live, revisions
from django_weft.changes import Changes
from django_weft.models import Document
from django_weft.revisions import Change, DocumentConflict

__all__ = ["Change", "DocumentConflict", "change_document", "open_document"]


def open_document(
    key: str, *, schema: str, version: int = 1, initial: Callable[[], dict[str, Any]] = dict
) -> Document:
    """The document at ``key``, created with ``initial()`` if it does not exist yet."""
    return revisions.open_document(key, schema=schema, version=version, initial=initial)


def change_document(document: Document, change: Change, *, attempts: int = 20) -> Document:
    """Apply ``change`` to the document's data, commit it as the next revision, and publish.

    See :func:`django_weft.revisions.change_document`.
    """
    changed = revisions.change_document(document, change, attempts=attempts)
    changes = Changes()
    changes.document(changed.pk)
    live.publish(changes)
    return changed

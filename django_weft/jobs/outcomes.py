"""What a finish hook receives: the outcome of a run, and a handle on its transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django_weft.engine.starting import insert_run
from django_weft.jobs.revisions import Change, change_document, open_document
from django_weft.live.changes import Changes
from django_weft.models import Document, Run

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from django_weft.jobs.registry import Job


@dataclass(frozen=True)
class Outcome:
    """How a run ended: ``kind`` is done, failed, aborted or lost; args and state always."""

    kind: str
    run: Run
    args: dict[str, Any]
    state: dict[str, Any] | None
    result: Any = None
    error_type: str = ""
    error_message: str = ""

    @property
    def ok(self) -> bool:
        return self.kind == "done"


class FinishContext:
    """The finish transaction: what a hook changes or starts commits with the outcome."""

    def __init__(self, *, run: Run, now: datetime, changes: Changes) -> None:
        self.run = run
        self.now = now
        self._changes = changes

    def document(
        self,
        key: str,
        *,
        schema: str,
        version: int = 1,
        initial: Callable[[], dict[str, Any]] = dict,
    ) -> Document:
        return open_document(key, schema=schema, version=version, initial=initial)

    def change(self, document: Document, change: Change) -> Document:
        changed = change_document(document, change)
        self._changes.document(changed.pk)
        return changed

    def start(
        self,
        job: Job,
        args: Mapping[str, Any] | None = None,
        *,
        key: str | None = None,
        owner: AbstractBaseUser | None = None,
    ) -> Run:
        """Start another job; it exists only if this finish commits."""
        run = insert_run(
            job, args, key=key, owner=owner if owner is not None else self.run.owner, now=self.now
        )
        self._changes.run(run.pk)
        return run

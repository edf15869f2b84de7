"""What a finish hook receives: how the run ended, and what it may do in that transaction.

A hook is written ``def finished(outcome: Outcome, tx: FinishContext) -> None``.
:class:`FinishContext` is a protocol, the promise the hook is typed against; the engine
hands it the finish step's own object (:class:`django_weft.engine.outcomes.hooks.Finish`),
so that what the job author imports does not reach into the engine that runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from django_weft.jobs.revisions import Change
from django_weft.models import Document, Run

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


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


class FinishContext(Protocol):
    """The finish transaction: what a hook changes or starts commits with the outcome.

    ``run`` is the finishing run, ``now`` the finish time.
    """

    @property
    def run(self) -> Run: ...

    @property
    def now(self) -> datetime: ...

    def document(
        self,
        key: str,
        *,
        schema: str,
        version: int = 1,
        initial: Callable[[], dict[str, Any]] = dict,
    ) -> Document:
        """The application document at ``key``, created with ``initial()`` if new."""

    def change(self, document: Document, change: Change) -> Document:
        """Apply ``change`` to ``document`` as its next revision, announced after commit."""

    def start(
        self,
        job: Any,
        args: Mapping[str, Any] | None = None,
        *,
        key: str | None = None,
        owner: AbstractBaseUser | None = None,
    ) -> Run:
        """Start another job (a :class:`~django_weft.jobs.registry.Job`); it exists only
        if this finish commits. The owner defaults to the finishing run's.

        ``job`` is typed ``Any`` because the registry types its hooks with this protocol:
        naming ``Job`` here would tie the two modules in a loop.
        """

    def start_group(
        self,
        members: Sequence[Any],
        *,
        callback: Any = None,
        on_failure: Any = None,
        condition: str = "all_ended",
        name: str = "",
        key: str | None = None,
        owner: AbstractBaseUser | None = None,
    ) -> Any:
        """Start a group of runs (``StartRequest`` members, a ``Callback`` or two; see
        docs/flows.md); it exists only if this finish commits. The owner defaults to the
        finishing run's. Returns the :class:`~django_weft.models.Group`."""

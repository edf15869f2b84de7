"""What a running job sees: its run, its state document, and abort-aware waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError

from django_weft.conf import weft_settings
from django_weft.exceptions import RunAborted
from django_weft.jobs.connections import drop_broken_connections
from django_weft.jobs.output import Throttle
from django_weft.jobs.revisions import Change, change_document
from django_weft.models import Run

if TYPE_CHECKING:
    import uuid

    from django_weft.models import Document


#: Told of each committed state change; the worker publishes it to the live views.
StateChanged = Callable[["Document"], None]


class RunState:
    """A run's state document; every ``change()`` commits one revision."""

    def __init__(self, document: Document, on_change: StateChanged) -> None:
        self.document = document
        self._on_change = on_change

    @property
    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = self.document.data
        return data

    def change(self, change: Change) -> dict[str, Any]:
        changed = change_document(self.document, change)
        self._on_change(changed)
        data: dict[str, Any] = changed.data
        return data

    async def achange(self, change: Change) -> dict[str, Any]:
        return await sync_to_async(self.change)(change)


class RunContext:
    """Handed to the job function as its first argument."""

    def __init__(self, run: Run, *, abort: threading.Event, on_state_change: StateChanged) -> None:
        self.run = run
        self._abort = abort
        self._next_poll = 0.0
        self._throttles: list[Throttle] = []
        #: Whether check()/sleep() raised RunAborted: the run honoured an abort.
        self.abort_raised = False
        self.state = RunState(run.state, on_state_change) if run.state is not None else None

    @property
    def run_id(self) -> uuid.UUID:
        return self.run.pk

    @property
    def due(self) -> datetime | None:
        """The slot a schedule armed this run for (None for a run started by a call)."""
        return self.run.due

    @property
    def attempt(self) -> int:
        return self.run.attempt

    @property
    def abort_requested(self) -> bool:
        """Whether an abort was requested; asks the database at most every poll interval.

        A database that does not answer is not an abort: the run goes on, and the next
        poll asks again on a fresh connection.
        """
        if not self._abort.is_set() and time.monotonic() >= self._next_poll:
            self._next_poll = time.monotonic() + weft_settings.ABORT_POLL_INTERVAL
            try:
                requested = Run.objects.filter(
                    pk=self.run.pk, abort_requested_at__isnull=False
                ).exists()
            except DatabaseError:
                drop_broken_connections()
                requested = False
            if requested:
                self._abort.set()
        return self._abort.is_set()

    def check(self) -> None:
        """Raise :class:`RunAborted` if an abort was requested; deliver throttled writes."""
        for throttle in self._throttles:
            throttle.poll()
        if self.abort_requested:
            self.abort_raised = True
            raise RunAborted(f"run {self.run.pk} was aborted")

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or raise :class:`RunAborted` as soon as an abort is requested."""
        deadline = time.monotonic() + seconds
        while True:
            self.check()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._abort.wait(min(remaining, weft_settings.ABORT_POLL_INTERVAL))

    async def acheck(self) -> None:
        await sync_to_async(self.check)()

    async def asleep(self, seconds: float) -> None:
        await sync_to_async(self.sleep)(seconds)

    def flush(self) -> None:
        """Deliver what the run's throttles still hold; called when the run ends."""
        for throttle in self._throttles:
            if throttle.pending:
                throttle.flush()

    def throttle(self, write: Callable[[], object], interval: float) -> Throttle:
        """A :class:`~django_weft.jobs.output.Throttle` that ``sleep()``/``check()`` flush."""
        throttle = Throttle(write, interval)
        self._throttles.append(throttle)
        return throttle

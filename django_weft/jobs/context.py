"""What a running job sees: its run, its state document, abort-aware waiting, and its
durable steps and waits (:mod:`django_weft.jobs.durable`)."""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError

from django_weft.conf import weft_settings
from django_weft.exceptions import RunAborted
from django_weft.jobs.connections import drop_broken_connections
from django_weft.jobs.durable import Journal
from django_weft.jobs.output import Throttle
from django_weft.jobs.revisions import Change, change_document
from django_weft.jobs.upstream import Upstream
from django_weft.models import Run
from django_weft.timing import clocks

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
        self._journal = Journal(run, self.now)
        #: For a workflow's step, how the steps it depends on ended, by name.
        self.upstream = Upstream(run)

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

    def now(self) -> datetime:
        """What time it is for the run: the process's clock (a driven one in tests and
        rehearsals), never before the moment the worker claimed it."""
        now = clocks.current_clock().now()
        claimed = self.run.started_at
        return max(now, claimed) if claimed is not None else now

    def step(self, name: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)``'s result, called only the first time the run
        comes to step ``name``; later attempts get the recorded result (JSON: a tuple
        comes back a list, the first time too). See :mod:`django_weft.jobs.durable`."""
        return self._journal.step(name, lambda: function(*args, **kwargs))

    def sleep_until(self, moment: datetime) -> None:
        """Wait until ``moment`` without holding a worker: the attempt ends, the run is
        ``waiting``, and it runs again from the top at ``moment`` (its steps recorded,
        this sleep over). Unlike :meth:`sleep`, which waits in place."""
        self._journal.sleep_until(moment)

    def sleep_for(self, duration: float | timedelta) -> None:
        """:meth:`sleep_until` ``duration`` (seconds, or a timedelta) after the run
        first came to this sleep."""
        self._journal.sleep_for(_duration(duration))

    def wait_for(self, signal: str, *, timeout: float | timedelta | None = None) -> Any:
        """The payload of a signal named ``signal`` sent to this run (one sent before
        the run waits is kept for it); until one comes the run is ``waiting`` and holds
        no worker. Raises :class:`~django_weft.exceptions.SignalTimeout` when none came
        ``timeout`` after the run first came to this wait."""
        limit = _duration(timeout) if timeout is not None else None
        return self._journal.wait_for(signal, limit)

    async def astep(
        self, name: str, function: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        """:meth:`step` for an async job; ``function`` may be a coroutine function."""
        found = await sync_to_async(self._journal.recorded_step)(name)
        if found is not None:
            return found.result
        result = function(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return await sync_to_async(self._journal.step)(name, lambda: result)

    async def asleep_until(self, moment: datetime) -> None:
        await sync_to_async(self.sleep_until)(moment)

    async def asleep_for(self, duration: float | timedelta) -> None:
        await sync_to_async(self.sleep_for)(duration)

    async def await_for(self, signal: str, *, timeout: float | timedelta | None = None) -> Any:
        """:meth:`wait_for` for an async job."""
        return await sync_to_async(self.wait_for)(signal, timeout=timeout)

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


def _duration(value: float | timedelta) -> timedelta:
    return value if isinstance(value, timedelta) else timedelta(seconds=value)

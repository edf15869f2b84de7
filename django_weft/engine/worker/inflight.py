"""The runs this worker executes: claimed here, their report not yet recorded.

The claim step adds them, the executor runs them, the report queue says when they are
done, and in between the timeouts, abort requests, fencing and shutdown steer them. They
are kept in one place so that each of those parts asks the same questions (which runs
are still ours to wait for? which one is that run?) instead of reaching into the worker.

Run threads add runs too (a thread that ended its run may claim the next itself, see
:mod:`~django_weft.engine.worker.intake`), so the executions are kept under a lock. Such a run
takes over its predecessor's executor slot (``handle``): giving up on the predecessor,
whose report waits to be recorded, must not abandon the thread now running its
successor.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

from django_weft.engine.worker.execution import Execution
from django_weft.engine.worker.executors import Executor


class InFlight:
    """The executions of this worker, by (run id, attempt), with the executor they run on."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self._executions: dict[tuple[uuid.UUID, int], Execution] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._executions)

    def __iter__(self) -> Iterator[Execution]:
        """A copy: steps give up on or finish executions while they go through them."""
        with self._lock:
            return iter(list(self._executions.values()))

    def __contains__(self, execution: object) -> bool:
        return isinstance(execution, Execution) and execution.key in self._executions

    def submit(self, execution: Execution, task: Callable[[], object]) -> None:
        """Keep ``execution`` and hand ``task`` (which runs it) to the executor."""
        with self._lock:
            self._executions[execution.key] = execution
        execution.handle = self.executor.submit(task)

    def hand_slot(self, previous: Execution, execution: Execution) -> None:
        """Keep ``execution``, which the thread of ``previous`` (whose report it delivered)
        runs next, in the executor slot that was ``previous``'s."""
        with self._lock:
            execution.handle, previous.handle = previous.handle, None
            self._executions[execution.key] = execution

    def done(self, execution: Execution) -> None:
        """Its report was recorded (or discarded): it is no longer this worker's."""
        with self._lock:
            self._executions.pop(execution.key, None)

    def live(self) -> list[Execution]:
        """The executions this worker still waits for (not given up on)."""
        return [execution for execution in self if not execution.given_up]

    def give_up(self, execution: Execution, *, abort: bool = False) -> None:
        """Stop waiting for ``execution``: what it reports later is discarded, and its
        executor slot is free again though its thread may still run (``abort`` asks it
        to stop too)."""
        with self._lock:
            execution.given_up = True
            slot, execution.handle = execution.handle, None
        if abort:
            execution.abort.set()
        if slot is not None:
            # None once a successor took the slot over: its thread is not this run's.
            self.executor.abandon(slot)  # type: ignore[arg-type]

    def abort(self, run_id: str) -> None:
        """Tell the execution of run ``run_id`` (a NOTIFY's payload) that it was aborted."""
        for execution in self:
            if str(execution.run.pk) == run_id:
                execution.abort.set()

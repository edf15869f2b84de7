"""The runs this worker executes: claimed here, their report not yet recorded.

The claim step adds them, the executor runs them, the report queue says when they are
done, and in between the timeouts, abort requests, fencing and shutdown steer them. They
are kept in one place so that each of those parts asks the same questions (which runs
are still ours to wait for? which one is that run?) instead of reaching into the worker.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

from django_weft.engine.execution import Execution
from django_weft.engine.executors import Executor


class InFlight:
    """The executions of this worker, by (run id, attempt), with the executor they run on."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self._executions: dict[tuple[uuid.UUID, int], Execution] = {}

    def __len__(self) -> int:
        return len(self._executions)

    def __iter__(self) -> Iterator[Execution]:
        """A copy: steps give up on or finish executions while they go through them."""
        return iter(list(self._executions.values()))

    def __contains__(self, execution: object) -> bool:
        return isinstance(execution, Execution) and execution.key in self._executions

    def submit(self, execution: Execution, task: Callable[[], object]) -> None:
        """Keep ``execution`` and hand ``task`` (which runs it) to the executor."""
        self._executions[execution.key] = execution
        execution.handle = self.executor.submit(task)

    def done(self, execution: Execution) -> None:
        """Its report was recorded (or discarded): it is no longer this worker's."""
        self._executions.pop(execution.key, None)

    def live(self) -> list[Execution]:
        """The executions this worker still waits for (not given up on)."""
        return [execution for execution in self if not execution.given_up]

    def give_up(self, execution: Execution, *, abort: bool = False) -> None:
        """Stop waiting for ``execution``: what it reports later is discarded, and its
        executor slot is free again though its thread may still run (``abort`` asks it
        to stop too)."""
        execution.given_up = True
        if abort:
            execution.abort.set()
        self.executor.abandon(execution.handle)  # type: ignore[arg-type]

    def abort(self, run_id: str) -> None:
        """Tell the execution of run ``run_id`` (a NOTIFY's payload) that it was aborted."""
        for execution in self:
            if str(execution.run.pk) == run_id:
                execution.abort.set()

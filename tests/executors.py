"""Executors that hold their tasks until the test runs them: runs in flight, frozen.

A test that must see one moment (a run claimed and not begun, a report not yet recorded)
however busy the machine cannot wait for real threads; these hold each submitted task
and run it on the test's own thread when told.
"""

from __future__ import annotations

from django_weft.engine.worker.executors import Executor, Slot, Task


class HeldExecutor(Executor):
    """Holds submitted tasks until the test runs them: a run in flight, frozen in time."""

    def __init__(self, concurrency: int) -> None:
        super().__init__(concurrency)
        self.held: list[Slot] = []

    def free_slots(self) -> int:
        return self.concurrency - len(self.held)

    def submit(self, task: Task) -> Slot:
        slot = Slot(task)
        self.held.append(slot)
        return slot

    def release(self) -> None:
        for slot in self.held:
            slot.task()
        self.held.clear()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return not self.held


class HeldThreads(HeldExecutor):
    """A :class:`HeldExecutor` whose tasks count as running beside the caller, as a
    thread executor's do (so run threads claim their next runs); notes the slots it is
    told to abandon."""

    runs_beside_caller = True

    def __init__(self, concurrency: int) -> None:
        super().__init__(concurrency)
        self.abandoned: list[Slot] = []

    def abandon(self, slot: Slot) -> None:
        self.abandoned.append(slot)

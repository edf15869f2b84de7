"""Executors: where claimed runs execute. Chosen by ``WEFT_EXECUTOR`` (an import string).

:class:`ThreadExecutor` runs each run on one of ``concurrency`` long-lived threads, so a
``runjobs`` process executes that many runs at once while its main thread keeps
scheduling; each thread keeps its database connection from run to run.
:class:`InlineExecutor` runs each run to its end in the calling thread, which makes a
driven-clock test read like a story. A thread that ended its run may take the next one
itself (``runs_beside_caller``): it stays in its slot, so the slot counts as taken
throughout.

A run that ignores its timeout cannot be stopped from outside its thread (Python has no
way to kill a thread). The worker *abandons* it: its slot counts as free again at once,
a new thread takes the next run, and the old thread ends when the run finally returns.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from django.db import connections

from django_weft.conf import weft_settings
from django_weft.jobs.connections import check_after_outage, drop_broken_connections
from django_weft.loading import import_setting

Task = Callable[[], object]

logger = logging.getLogger("django_weft.executors")


class Slot:
    """One submitted task: what ``submit`` returns and ``abandon`` takes."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.abandoned = False
        self.thread: threading.Thread | None = None


class Executor:
    """The interface: accept tasks while there is room, and wait for them."""

    #: Whether tasks run on threads of their own, beside the caller's: a run thread may
    #: then claim and run its next run itself instead of waiting for the worker's loop
    #: (see :mod:`~django_weft.engine.worker.intake`). False where a task runs in the caller.
    runs_beside_caller = False

    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.concurrency = concurrency

    def free_slots(self) -> int:
        raise NotImplementedError

    def submit(self, task: Task) -> Slot:
        raise NotImplementedError

    def abandon(self, slot: Slot) -> None:
        """Stop counting ``slot``'s task: its room is free again though it still runs."""

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no task (but abandoned ones) is running; False if ``timeout`` passed."""
        raise NotImplementedError

    def shutdown(self, *, wait: bool = True) -> None:
        """Release the executor's resources, waiting for running tasks unless told not to."""


class InlineExecutor(Executor):
    """Runs each task in the caller's thread before ``submit`` returns."""

    def free_slots(self) -> int:
        return self.concurrency

    def submit(self, task: Task) -> Slot:
        slot = Slot(task)
        task()
        return slot

    def wait_idle(self, timeout: float | None = None) -> bool:
        return True


class ThreadExecutor(Executor):
    """Runs tasks on up to ``concurrency`` threads (plus abandoned ones still running)."""

    runs_beside_caller = True

    def __init__(self, concurrency: int) -> None:
        super().__init__(concurrency)
        self._tasks: queue.SimpleQueue[Slot | None] = queue.SimpleQueue()
        self._lock = threading.Condition()
        self._running: set[Slot] = set()
        self._abandoned: set[Slot] = set()
        self._idle_threads = 0
        self._threads: set[threading.Thread] = set()
        self._started = 0

    def free_slots(self) -> int:
        with self._lock:
            return self.concurrency - len(self._running)

    def submit(self, task: Task) -> Slot:
        slot = Slot(task)
        with self._lock:
            self._running.add(slot)
            if self._idle_threads:
                # Taken now, so that two quick submits never wait for one thread.
                self._idle_threads -= 1
            else:
                self._started += 1
                thread = threading.Thread(
                    target=self._serve, name=f"weft-run-{self._started}", daemon=True
                )
                self._threads.add(thread)
                thread.start()
        self._tasks.put(slot)
        return slot

    def abandon(self, slot: Slot) -> None:
        with self._lock:
            if slot in self._running:
                slot.abandoned = True
                self._running.discard(slot)
                self._abandoned.add(slot)
                self._lock.notify_all()

    def _next_task(self) -> Slot | None:
        """The next task for this thread; its connections checked first if the database
        failed since it last looked (:func:`check_after_outage`)."""
        slot = self._tasks.get()
        if slot is not None:
            check_after_outage()
        return slot

    def _serve(self) -> None:
        try:
            while (slot := self._next_task()) is not None:
                slot.thread = threading.current_thread()
                try:
                    slot.task()
                except BaseException:
                    # The task reports its own outcome; this is a bug in that reporting, or
                    # a job's SystemExit: the thread lives on to serve the next run.
                    logger.exception("a task of the run executor failed")
                finally:
                    drop_broken_connections()
                with self._lock:
                    self._running.discard(slot)
                    self._lock.notify_all()
                    if slot.abandoned:
                        self._abandoned.discard(slot)
                        return  # written off: a new thread already took its place
                    self._idle_threads += 1
        finally:
            connections.close_all()
            with self._lock:
                self._threads.discard(threading.current_thread())

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: not self._running, timeout)

    def shutdown(self, *, wait: bool = True) -> None:
        """Let every thread end after its task; with ``wait``, join all but abandoned ones.

        Threads are daemons: an abandoned run still going does not keep the process alive.
        """
        with self._lock:
            zombies = {slot.thread for slot in self._abandoned}
            serving = [t for t in self._threads if t.is_alive() and t not in zombies]
        for _ in serving:
            self._tasks.put(None)
        if wait:
            for thread in serving:
                thread.join()


def load_executor(path: str | None, concurrency: int) -> Executor:
    executor = import_setting(path or weft_settings.EXECUTOR)(concurrency)
    if not isinstance(executor, Executor):
        raise TypeError(f"{path} is not a django_weft.engine.worker.executors.Executor")
    return executor

"""Executors: where claimed runs execute. Chosen by ``WEFT_EXECUTOR`` (an import string).

:class:`ThreadExecutor` runs each run on one of a fixed number of threads, so a
``runjobs`` process executes ``--concurrency`` runs at once while its main thread keeps
scheduling. :class:`InlineExecutor` runs each run to its end in the calling thread,
which makes a driven-clock test read like a story.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from django.db import close_old_connections

from django_weft.conf import weft_settings
from django_weft.loading import import_setting

Task = Callable[[], object]

logger = logging.getLogger("django_weft.executors")


class Executor:
    """The interface: accept tasks while there is room, and wait for them."""

    def __init__(self, concurrency: int) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.concurrency = concurrency

    def free_slots(self) -> int:
        raise NotImplementedError

    def submit(self, task: Task) -> None:
        raise NotImplementedError

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no task is running; False if ``timeout`` passed first."""
        raise NotImplementedError

    def shutdown(self, *, wait: bool = True) -> None:
        """Release the executor's resources, waiting for running tasks unless told not to."""


class InlineExecutor(Executor):
    """Runs each task in the caller's thread before ``submit`` returns."""

    def free_slots(self) -> int:
        return self.concurrency

    def submit(self, task: Task) -> None:
        task()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return True


class ThreadExecutor(Executor):
    """Runs tasks on ``concurrency`` threads; each task closes its database connection."""

    def __init__(self, concurrency: int) -> None:
        super().__init__(concurrency)
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="weft-run")
        self._running: set[Future[None]] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def free_slots(self) -> int:
        with self._lock:
            return self.concurrency - len(self._running)

    def submit(self, task: Task) -> None:
        future = self._pool.submit(self._run, task)
        with self._lock:
            self._running.add(future)
        future.add_done_callback(self._done)

    @staticmethod
    def _run(task: Task) -> None:
        try:
            task()
        except Exception:
            # A future nobody reads would swallow it; say it where operators look.
            logger.exception("a task of the run executor failed")
        finally:
            # Each pool thread has its own connections: kept as CONN_MAX_AGE says.
            close_old_connections()

    def _done(self, future: Future[None]) -> None:
        with self._idle:
            self._running.discard(future)
            self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: not self._running, timeout)

    def shutdown(self, *, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=not wait)


def load_executor(path: str | None, concurrency: int) -> Executor:
    executor = import_setting(path or weft_settings.EXECUTOR)(concurrency)
    if not isinstance(executor, Executor):
        raise TypeError(f"{path} is not a django_weft.executors.Executor")
    return executor

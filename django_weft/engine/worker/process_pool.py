"""The process executor: runs of ``executor="process"`` jobs execute in child processes.

A thread cannot be killed, so a job that never reaches ``ctx.check()`` (a C call, a
catastrophic regex, a loop that holds the GIL) outlives its timeout on a thread and, while
it holds the GIL, stalls the worker's loop and heartbeat. A job of the process executor
runs in a child process of the worker's :class:`ProcessPool` instead: the worker's run
thread only waits on a pipe (:func:`execute_in_child`), and at the timeout's grace the
child is killed (SIGKILL) and replaced. A child that dies under a run fails its attempt
with ``ProcessDied``.

Children are started with ``spawn``: a fresh interpreter that sets up Django once
(:mod:`~django_weft.engine.worker.process_child`) and serves run after run. Not ``fork``: the
worker has threads (its run threads, its LISTEN and publisher threads) and open sockets
(its database connections, the liveness lock's connection), and a fork copies locks other
threads held at that instant, locked for ever, and shares those sockets with the child.
Not ``forkserver`` either: its server starts from the worker's ``__main__`` all the same
and adds a third process to keep alive, for a start-up the pool pays once per child.

A child is started when a run finds none idle, and then kept: the pool holds at most
as many children as the worker runs runs at once (its concurrency), and a child killed
or dead is replaced at the next run that needs one. The first run of each child waits
for its start-up (an interpreter and ``django.setup()``), inside its timeout. Children are
started by one thread of the pool's own: on Linux a child dies with the thread that
started it (``PR_SET_PDEATHSIG``), which must outlive every run.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from django.conf import settings
from django.db import connections

from django_weft.conf import WeftSettings, weft_settings
from django_weft.engine.outcomes.finishing import AttemptReport
from django_weft.engine.worker.execution import Execution, report_of
from django_weft.engine.worker.process_child import main
from django_weft.exceptions import RunProcessDied
from django_weft.jobs.context import StateChanged
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.models import RunStatus

logger = logging.getLogger("django_weft.executors")

CONTEXT = multiprocessing.get_context("spawn")
#: Seconds a closing pool gives its children to close their connections and exit.
EXIT_GRACE = 5.0


@dataclass(eq=False)
class Child:
    """One child process and the two pipes to it."""

    process: BaseProcess
    #: The worker's end of the pipe the child reads runs and aborts from.
    inbox: Connection
    #: The worker's end of the pipe the child sends state changes and reports on.
    outbox: Connection

    def kill(self) -> None:
        """SIGKILL the child, reap it and close the pipes."""
        self.process.kill()
        self.process.join()
        self.close_pipes()

    def close_pipes(self) -> None:
        self.inbox.close()
        self.outbox.close()

    def how_it_ended(self) -> str:
        code = self.process.exitcode
        if code is not None and code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"


def child_settings() -> dict[str, Any]:
    """What a child sets before ``django.setup()``: the worker's ``DATABASES`` as its
    connections hold them, and every ``WEFT_*`` setting the worker has."""
    overrides = {
        name: getattr(settings, name) for name in WeftSettings.declared() if hasattr(settings, name)
    }
    overrides["DATABASES"] = {
        alias: dict(connections[alias].settings_dict) for alias in connections
    }
    return overrides


class ProcessPool:
    """Up to ``size`` children, started once and reused from run to run."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._idle: list[Child] = []
        self._busy: set[Child] = set()
        self._lock = threading.Condition()
        self._closed = False
        #: Set once a closing pool's children have exited: the starter thread may end.
        self._released = threading.Event()
        self._starter: threading.Thread | None = None
        #: How many callers of :meth:`take` wait for a child.
        self._waiting = 0
        #: How many children were ever started (replacements included).
        self.started = 0

    @property
    def closed(self) -> bool:
        return self._closed

    def _start_starter(self) -> None:
        with self._lock:
            if self._starter is None and not self._closed:
                self._starter = threading.Thread(
                    target=self._keep_full, name="weft-process-pool", daemon=True
                )
                self._starter.start()

    def take(self, timeout: float) -> Child | None:
        """An idle child, now busy; None if none came within ``timeout`` or the pool closed.

        With none idle, the starter thread starts one for this caller (while the pool
        holds fewer than ``size``).
        """
        self._start_starter()
        with self._lock:
            self._waiting += 1
            self._lock.notify_all()
            try:
                while self._lock.wait_for(lambda: self._closed or self._idle, timeout):
                    if self._closed:
                        return None
                    child = self._idle.pop()
                    if child.process.is_alive():
                        self._busy.add(child)
                        return child
                    logger.warning("an idle child process died (%s)", child.how_it_ended())
                    child.close_pipes()
            finally:
                self._waiting -= 1
        return None

    def give_back(self, child: Child) -> None:
        """``child`` finished its run and serves the next one."""
        with self._lock:
            self._busy.discard(child)
            if self._closed:
                child.kill()
                return
            self._idle.append(child)
            self._lock.notify_all()

    def replace(self, child: Child) -> None:
        """Kill ``child`` (if it still runs) and have another started in its place."""
        child.kill()
        with self._lock:
            self._busy.discard(child)
            self._lock.notify_all()

    def close(self) -> None:
        """Let idle children exit (closing their pipes), kill busy ones and stragglers."""
        with self._lock:
            self._closed = True
            idle, busy = list(self._idle), list(self._busy)
            self._idle.clear()
            self._busy.clear()
            self._lock.notify_all()
        for child in busy:
            child.kill()
        for child in idle:
            child.inbox.close()
        for child in idle:
            child.process.join(EXIT_GRACE)
            child.kill()
        self._released.set()
        if self._starter is not None:
            self._starter.join()

    def _keep_full(self) -> None:
        """The starter thread: start a child whenever the pool holds fewer than ``size``."""
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._closed or self._short())
                if self._closed:
                    break
            try:
                child = self._start_child()
            except Exception:
                # Out of processes or memory: the runs waiting for a child wait on.
                logger.exception("could not start a child process of the pool")
                self._released.wait(1.0)
                continue
            with self._lock:
                if self._closed:
                    child.kill()
                    break
                self._idle.append(child)
                self._lock.notify_all()
        # Children die with this thread (PR_SET_PDEATHSIG): it ends after them.
        self._released.wait()

    def _short(self) -> bool:
        """Whether a caller waits with no idle child for it, and there is room for one."""
        held = len(self._idle) + len(self._busy)
        return self._waiting > len(self._idle) and held < self.size

    def _start_child(self) -> Child:
        theirs_in, inbox = CONTEXT.Pipe(duplex=False)
        outbox, theirs_out = CONTEXT.Pipe(duplex=False)
        process = CONTEXT.Process(
            target=main,
            args=(theirs_in, theirs_out, os.getpid(), child_settings()),
            name="weft-run-process",
            daemon=True,
        )
        process.start()
        theirs_in.close()
        theirs_out.close()
        self.started += 1
        logger.info("started child process %s of the pool", process.pid)
        return Child(process, inbox, outbox)


def execute_in_child(
    execution: Execution,
    pool: ProcessPool,
    *,
    deliver: Callable[[AttemptReport], None],
    on_state_change: StateChanged,
) -> None:
    """Run ``execution`` in a child of ``pool`` and ``deliver`` its report, on a run thread.

    While the child runs the job this thread forwards the run's abort (and whether its
    timeout set it), publishes its state changes, and watches for the end: the report,
    the child's death (the attempt fails with ``ProcessDied``), or the worker giving up
    on the run (its timeout's grace passed, a forced stop, a fence), when it kills the
    child. The pool then starts another in its place.
    """
    poll = weft_settings.ABORT_POLL_INTERVAL
    child = None
    while child is None:
        if execution.given_up or pool.closed:
            return
        child = pool.take(poll)
    told = (False, False)
    try:
        child.inbox.send(("run", execution.run, execution.worker_id))
        while not execution.given_up:
            asked = (execution.abort.is_set(), execution.timed_out)
            if asked[0] and asked != told:
                child.inbox.send(("abort", execution.timed_out))
                told = asked
            ready = wait([child.outbox, child.process.sentinel], poll)
            if child.outbox in ready:
                kind, payload = child.outbox.recv()
                if kind == "report":
                    pool.give_back(child)
                    deliver(payload)
                    return
                on_state_change(payload)
            elif ready:
                break
    except (EOFError, OSError):
        pass  # the child is gone: said below
    pool.replace(child)
    message = (
        f"the child process running the job died ({child.how_it_ended()}) before it"
        " reported how the run ended; another process takes its place"
    )
    if execution.given_up:
        logger.warning("killed the child process of %s run %s", execution.run.job, execution.run.pk)
    else:
        logger.error("%s run %s: %s", execution.run.job, execution.run.pk, message)
    # Delivered even for a run given up on: its report is discarded, and that is what
    # tells the worker the execution has ended.
    died = ErrorRecord("ProcessDied", message, "")
    deliver(report_of(execution, RunStatus.FAILED, error=died, error_class=RunProcessDied))

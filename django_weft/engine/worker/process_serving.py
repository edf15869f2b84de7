"""A child process's side of the pool: runs arrive over a pipe, one at a time, and each
goes through the same run step as on a thread
(:func:`~django_weft.engine.worker.execution.execute`).

What the worker sends (on ``inbox``): ``("run", run, worker_id)``, the claimed
:class:`~django_weft.models.Run` (its job name and version, args, id, attempt, due and
state document), then ``("abort", timed_out)`` whenever the run is asked to stop. What the
child sends back (on ``outbox``): ``("state", document)`` after each committed state
change, for the worker to publish, and ``("report", report)`` once the attempt ended. The
job reads and writes the database on this process's own connections: state changes,
output, abort polling (``ctx.check()``) and its own queries work as on a thread. The
outcome is written by the worker, from the report.

A listener thread reads the inbox while the job runs, so an abort reaches a job that
calls ``ctx.check()``; a job that never lets that thread run (it holds the GIL) is what
the worker kills at its timeout's grace.
"""

from __future__ import annotations

import logging
import pickle
import queue
import threading
from dataclasses import replace
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

from django.db import connections

from django_weft.engine.outcomes.finishing import AttemptReport
from django_weft.engine.worker.execution import Execution, execute
from django_weft.jobs.connections import drop_broken_connections, drop_dead_connections

logger = logging.getLogger("django_weft.executors")


def serve(inbox: Connection, outbox: Connection) -> None:
    """Execute the runs the worker sends until it closes the pipe, then exit cleanly."""
    runs: queue.SimpleQueue[Execution | None] = queue.SimpleQueue()
    threading.Thread(
        target=_listen, args=(inbox, runs), name="weft-child-inbox", daemon=True
    ).start()
    while (execution := _next_run(runs)) is not None:
        try:
            execute(
                execution,
                deliver=partial(_send_report, outbox),
                on_state_change=partial(_send, outbox, "state"),
            )
        except BaseException:
            # As on a run thread: the report is sent already (a job's SystemExit is
            # re-raised after it), and the child lives on to serve the next run.
            logger.exception("a run in a child process of the pool failed")
        finally:
            drop_broken_connections()
    connections.close_all()


def _next_run(runs: queue.SimpleQueue[Execution | None]) -> Execution | None:
    """The next run; the child's connections asked first whether they still live: the
    outages its worker notes do not reach this process, and a run in a child is slow
    enough for one ``SELECT 1`` not to count."""
    execution = runs.get()
    if execution is not None:
        drop_dead_connections()
    return execution


def _listen(inbox: Connection, runs: queue.SimpleQueue[Execution | None]) -> None:
    """Hand each run to the serving loop and each abort to the run it stops."""
    current: Execution | None = None
    while True:
        try:
            message = inbox.recv()
        except (EOFError, OSError):
            # The worker closed the pool (or died): a run still going is asked to stop.
            if current is not None:
                current.abort.set()
            runs.put(None)
            return
        if message[0] == "run":
            current = Execution(run=message[1], worker_id=message[2])
            runs.put(current)
        elif current is not None:
            current.timed_out = message[1]
            current.abort.set()


def _send(outbox: Connection, kind: str, payload: Any) -> None:
    outbox.send((kind, payload))


def _send_report(outbox: Connection, report: AttemptReport) -> None:
    """Send the report; without its error class if that class cannot be pickled (one
    defined inside a function): the worker then judges retries without it."""
    try:
        _send(outbox, "report", report)
    except (pickle.PicklingError, AttributeError, TypeError):
        _send(outbox, "report", replace(report, error_class=None))

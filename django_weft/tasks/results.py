"""A task's run read back as a ``django.tasks.TaskResult``: the field mapping.

============================  ==========================================================
``TaskResult``                from the run
============================  ==========================================================
``id``                        ``str(run.pk)``
``task``                      the task at the stored path, ``.using()`` the stored
                              priority, queue, ``run_after`` and backend
``status``                    see :data:`STATUSES`
``enqueued_at``               ``created_at``
``started_at``                the start of attempt 1
``last_attempted_at``         the start of the latest attempt
``finished_at``               ``finished_at`` (None while a retry waits)
``args``, ``kwargs``          as enqueued
``errors``                    one per attempt that ended in error, the latest last
``worker_ids``                the worker of each attempt claimed, in order
``return_value``              ``result``
============================  ==========================================================

The run's own row holds its latest attempt and :class:`~django_weft.models.Attempt` rows
the earlier ones that were retried, so a result costs one query for the run and, only
when it was tried more than once, one for its attempts.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from django_weft.jobs.tracebacks import class_path_of
from django_weft.models import Attempt, Run, RunStatus
from django_weft.tasks.declared import declared_task
from django_weft.tasks.framework import (
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
)

if TYPE_CHECKING:
    from django_weft.tasks.framework import AnyResult, AnyTask

STATUSES: dict[str, TaskResultStatus] = {
    RunStatus.QUEUED: TaskResultStatus.READY,
    RunStatus.RUNNING: TaskResultStatus.RUNNING,
    RunStatus.WAITING: TaskResultStatus.RUNNING,
    RunStatus.DONE: TaskResultStatus.SUCCESSFUL,
    RunStatus.FAILED: TaskResultStatus.FAILED,
    RunStatus.ABORTED: TaskResultStatus.FAILED,
    RunStatus.LOST: TaskResultStatus.FAILED,
}
"""A run's status as a task result's. A run waiting for a retry is ``queued``: READY; a
run in a durable wait (``waiting``) has begun and not ended: RUNNING."""

ABORTED_CLASS = "django_weft.exceptions.RunAborted"
FALLBACK_CLASS = "builtins.Exception"
"""The class of an error whose type names neither a built-in nor one of weft's own
(rows stored before class paths were recorded)."""

PRUNED_WORKER = "(pruned worker)"
"""The worker id of an attempt whose worker row was pruned since: still counted."""

ENDED_IN_ERROR = (RunStatus.FAILED, RunStatus.ABORTED, RunStatus.LOST)


class ErrorRow(Protocol):
    """What a run and an attempt both store about how they ended."""

    status: str
    error_type: str
    error_class_path: str
    error_message: str
    error_traceback: str


def parse_id(result_id: object) -> uuid.UUID:
    """The run id that ``result_id`` is; ``TaskResultDoesNotExist`` for what is no UUID."""
    try:
        return uuid.UUID(str(result_id))
    except ValueError:
        raise TaskResultDoesNotExist(f"no task result {result_id!r}") from None


def task_runs() -> Any:
    """Runs of tasks (a plain job's runs are not task results)."""
    return Run.objects.exclude(task_backend="")


def earlier_attempts(run: Run) -> list[Attempt]:
    """The attempts of ``run`` kept apart from its row; no query when there are none."""
    kept = run.attempt - 1 if run.status != RunStatus.QUEUED else run.attempt
    if kept < 1:
        return []
    return list(Attempt.objects.filter(run_id=run.pk).order_by("number"))


def stored_task(run: Run) -> AnyTask:
    """The task declared at ``run``'s stored path, as it was enqueued.

    A run enqueued with the task's own options (the common case) gets the task itself:
    ``using()`` would make an equal copy, validated again, twice per attempt.
    """
    task = declared_task(run.job)
    if task is None:
        raise TaskResultDoesNotExist(f'run {run.pk}: "{run.job}" names no task declared here')
    stored = (run.priority, run.queue, run.run_after, run.task_backend)
    if stored == (task.priority, task.queue_name, task.run_after, task.backend):
        return task
    return task.using(
        priority=run.priority,
        queue_name=run.queue,
        run_after=run.run_after,
        backend=run.task_backend,
    )


def result_of(run: Run, attempts: Sequence[Attempt], *, task: AnyTask | None = None) -> AnyResult:
    """``run`` (with its :func:`earlier_attempts`) as a ``TaskResult``."""
    by_number = {attempt.number: attempt for attempt in attempts}
    current = run.attempt if run.status != RunStatus.QUEUED else None
    first = by_number.get(1)
    latest = by_number.get(run.attempt)
    stored: dict[str, Any] = run.args or {}
    result = TaskResult(
        task=task or stored_task(run),
        id=str(run.pk),
        status=STATUSES[run.status],
        enqueued_at=run.created_at,
        started_at=first.started_at if first is not None else _started(run, current),
        finished_at=run.finished_at,
        last_attempted_at=(
            _started(run, current) if current else latest.started_at if latest else None
        ),
        args=list(stored.get("args", [])),
        kwargs=dict(stored.get("kwargs", {})),
        backend=run.task_backend,
        errors=list(_errors(run, attempts)),
        worker_ids=[_worker_id(run, by_number, number) for number in range(1, run.attempt + 1)],
    )
    if run.status == RunStatus.DONE:
        object.__setattr__(result, "_return_value", run.result)
    return result


def _started(run: Run, current: int | None) -> datetime | None:
    return run.started_at if current else None


def _worker_id(run: Run, by_number: dict[int, Attempt], number: int) -> str:
    attempt = by_number.get(number)
    worker = attempt.worker_id if attempt is not None else run.worker_id
    return str(worker) if worker is not None else PRUNED_WORKER


def _errors(run: Run, attempts: Sequence[Attempt]) -> Iterator[TaskError]:
    rows: list[ErrorRow] = [*attempts, run]
    for row in rows:
        if row.status in ENDED_IN_ERROR:
            yield error_of(row)


def error_of(row: ErrorRow) -> TaskError:
    """How a run or attempt that ended in error is told as a ``TaskError``."""
    if row.status == RunStatus.ABORTED:
        # Aborted: by a request, or by a worker that stopped (``WorkerStopped``).
        path = ABORTED_CLASS
        message = row.error_message or "the run was aborted"
    else:
        path = row.error_class_path or class_path_of(row.error_type) or FALLBACK_CLASS
        message = row.error_message
    name = path.removeprefix("builtins.")
    told = f"{name}: {message}\n" if message else f"{name}\n"
    return TaskError(exception_class_path=path, traceback=row.error_traceback or told)

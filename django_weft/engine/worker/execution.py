"""The run step: call the job function outside any transaction and report how it ended.

Nothing here writes the outcome: :func:`execute` hands an
:class:`~django_weft.engine.outcomes.finishing.AttemptReport` to the worker, which
records it (and keeps it until the database takes it, through an outage if need be).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from asgiref.sync import async_to_sync
from rest_framework import serializers

from django_weft import tracing
from django_weft.engine.outcomes.finishing import AttemptReport
from django_weft.exceptions import RunAborted
from django_weft.jobs.context import RunContext, StateChanged
from django_weft.jobs.durable import Suspended
from django_weft.jobs.registry import Job, flatten_errors, registry
from django_weft.jobs.storable import find_unstorable
from django_weft.jobs.tracebacks import ErrorRecord, record_error
from django_weft.models import Run, RunStatus

logger = logging.getLogger("django_weft.execution")

#: Raised by the job yet ending the whole process: recorded like any error, then re-raised.
PROCESS_EXITS = (KeyboardInterrupt, SystemExit)
#: What a ``django.tasks`` task raises to end the process: Django's backends record a
#: task's ``SystemExit`` as its failure and go on, so only ``KeyboardInterrupt`` ends it.
TASK_PROCESS_EXITS = (KeyboardInterrupt,)


@dataclass(eq=False)
class Execution:
    """A run a worker claimed and is executing: what the worker needs to steer it.

    ``abort`` is set by an abort request, a shutdown or the timeout; ``timed_out`` says it
    was the timeout. ``given_up`` is set when the worker stopped waiting for it (its
    timeout's grace passed, or the worker was declared dead): whatever it reports later
    is discarded. ``in_process`` says its job runs in a child process of the worker's
    pool (:mod:`~django_weft.engine.worker.process_pool`) rather than on the run thread.
    """

    run: Run
    worker_id: uuid.UUID
    deadline: datetime | None = None
    abort: threading.Event = field(default_factory=threading.Event)
    timed_out: bool = False
    given_up: bool = False
    in_process: bool = False
    handle: object = None

    @property
    def key(self) -> tuple[uuid.UUID, int]:
        return (self.run.pk, self.run.attempt)


def execute(
    execution: Execution,
    *,
    deliver: Callable[[AttemptReport], None],
    on_state_change: StateChanged,
) -> None:
    """Run one claimed run and ``deliver`` its report; never raises for what the job does.

    Whatever the job raises ends the attempt, ``BaseException`` included (a job's
    ``CancelledError`` or ``SystemExit`` must not leave its run running for ever). A
    ``KeyboardInterrupt`` or ``SystemExit`` is re-raised once its report is delivered.
    The whole attempt is the ``weft.run`` span (see :mod:`django_weft.tracing`), ending
    with the attempt's status.
    """
    run = execution.run
    attributes: dict[str, tracing.Attribute] = {
        "weft.job": run.job,
        "weft.run_id": str(run.pk),
        "weft.attempt": run.attempt,
    }
    with tracing.span("weft.run", attributes) as span:

        def deliver_and_note(report: AttemptReport) -> None:
            span.set_attribute("weft.status", str(report.status))
            deliver(report)

        _execute(execution, deliver=deliver_and_note, on_state_change=on_state_change)


def _execute(
    execution: Execution,
    *,
    deliver: Callable[[AttemptReport], None],
    on_state_change: StateChanged,
) -> None:
    run = execution.run
    job = registry.deployed(run.job, run.job_version)
    if job is None:
        # Claiming filters on deployed jobs, so only a redeploy in between gets here.
        missing = ErrorRecord(
            "UnknownJob", f'job "{run.job}" version {run.job_version} is not deployed here', ""
        )
        deliver(report_of(execution, RunStatus.FAILED, error=missing))
        return
    context = RunContext(run, abort=execution.abort, on_state_change=on_state_change)
    try:
        try:
            result = _validate_result(job, _call(job, context))
        finally:
            # A throttled write the job did not flush still reaches the outcome.
            context.flush()
    except BaseException as error:
        deliver(_ending(execution, job, context, error=error))
        if isinstance(error, TASK_PROCESS_EXITS if job.task_backend else PROCESS_EXITS):
            raise
        return
    deliver(_ending(execution, job, context, result=result))


def _ending(
    execution: Execution,
    job: Job,
    context: RunContext,
    *,
    error: BaseException | None = None,
    result: Any = None,
) -> AttemptReport:
    """The report of an attempt that returned ``result`` or raised ``error``."""
    stopped = (
        isinstance(error, RunAborted)
        or (isinstance(error, asyncio.CancelledError) and execution.abort.is_set())
        # The job caught RunAborted and carried on: it was still aborted.
        or (error is None and context.abort_raised)
    )
    if stopped and execution.timed_out:
        timeout = f"the run passed its timeout of {job.timeout:g}s and was stopped"
        return report_of(execution, RunStatus.FAILED, error=ErrorRecord("Timeout", timeout, ""))
    if stopped:
        return report_of(execution, RunStatus.ABORTED)
    if isinstance(error, Suspended):
        return replace(
            report_of(execution, RunStatus.WAITING),
            wake_at=error.wake_at,
            awaiting=error.awaiting,
        )
    if error is None:
        return report_of(execution, RunStatus.DONE, result=result)
    run = execution.run
    logger.info("%s run %s raised %s: %s", run.job, run.pk, type(error).__name__, error)
    failed = record_error(error)
    return report_of(execution, RunStatus.FAILED, error=failed, error_class=type(error))


def report_of(
    execution: Execution,
    status: RunStatus,
    *,
    result: Any = None,
    error: ErrorRecord | None = None,
    error_class: type[BaseException] | None = None,
) -> AttemptReport:
    """The report that ``execution``'s attempt ended ``status``."""
    run = execution.run
    return AttemptReport(
        run_id=run.pk,
        job=run.job,
        worker_id=execution.worker_id,
        attempt=run.attempt,
        started_at=run.started_at,
        status=status,
        result=result,
        error=error or ErrorRecord("", "", ""),
        error_class=error_class,
        schedule_id=run.schedule_id,
        run=run,
    )


def _call(job: Job, context: RunContext) -> Any:
    args = job.decode_args(context.run.args)
    if job.is_async:
        # async_to_sync, not asyncio.run: the job's sync_to_async calls (its ORM work)
        # then run on this worker thread, whose database connections the worker keeps.
        return async_to_sync(job.func)(context, **args)
    return job.func(context, **args)


def _validate_result(job: Job, result: Any) -> Any:
    """The result as stored: through the job's result serializer, and JSON in any case."""
    if job.result is not None:
        field = job.result()
        try:
            result = field.to_representation(field.run_validation(result))
        except serializers.ValidationError as error:
            details = "; ".join(
                f"{k}: {' '.join(v)}" for k, v in flatten_errors(error.detail).items()
            )
            raise InvalidResult(f'job "{job.name}" returned an invalid result: {details}') from None
    try:
        # As Run.result (a JSONField without an encoder) will store it.
        json.dumps(result)
    except (TypeError, ValueError) as error:
        raise InvalidResult(
            f'job "{job.name}" returned a result that is not JSON: {error}'
        ) from None
    found = find_unstorable(result, "result")
    if found is not None:
        raise InvalidResult(
            f'job "{job.name}" returned a result it cannot store: {found.where}: {found.problem}'
        )
    return result


class InvalidResult(ValueError):
    """The job's return value cannot be stored as its result: it fails the job's result
    serializer, is not JSON, or holds a NUL character."""

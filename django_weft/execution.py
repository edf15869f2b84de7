"""The run step: call the job function outside any transaction, then finish the run."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from asgiref.sync import async_to_sync
from rest_framework import serializers

from django_weft.context import RunContext
from django_weft.exceptions import RunAborted
from django_weft.jobs import Job, flatten_errors, registry
from django_weft.models import Run, RunStatus
from django_weft.runs import finish

logger = logging.getLogger("django_weft.execution")


def execute(run: Run, *, abort: threading.Event, now: Callable[[], datetime]) -> Run | None:
    """Run one claimed run to its outcome; never raises for what the job does."""
    job = registry.deployed(run.job, run.job_version)
    if job is None:
        # Claiming filters on deployed jobs, so only a redeploy in between gets here.
        return finish(
            run.pk,
            RunStatus.FAILED,
            now=now(),
            error_type="UnknownJob",
            error_message=f'job "{run.job}" version {run.job_version} is not deployed here',
        )
    context = RunContext(run, abort=abort)
    status, result, error_type, error_message = RunStatus.DONE, None, "", ""
    try:
        try:
            result = _validate_result(job, _call(job, context))
        finally:
            # A throttled write the job did not flush still reaches the outcome.
            context.flush()
    except RunAborted:
        status = RunStatus.ABORTED
    except Exception as error:
        logger.info("%s run %s raised %s: %s", run.job, run.pk, type(error).__name__, error)
        status, error_type, error_message = RunStatus.FAILED, type(error).__name__, str(error)
    if status == RunStatus.DONE and context.abort_raised:
        # The job caught RunAborted and carried on; it was still aborted.
        status = RunStatus.ABORTED
    try:
        return finish(
            run.pk,
            status,
            now=now(),
            result=result,
            error_type=error_type,
            error_message=error_message,
        )
    except Exception as error:
        # The outcome could not be stored (a database error, a buffered fire that
        # broke): record that much, so the run does not stay "running" for ever.
        logger.exception("could not finish %s run %s", run.job, run.pk)
        return finish(
            run.pk,
            RunStatus.FAILED,
            now=now(),
            error_type=type(error).__name__,
            error_message=f"the outcome ({status}) could not be recorded: {error}",
        )


def _call(job: Job, context: RunContext) -> Any:
    args = job.decode_args(context.run.args)
    if job.is_async:
        # async_to_sync, not asyncio.run: the job's sync_to_async calls (its ORM work)
        # then run on this worker thread, whose database connections the worker closes.
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
    return result


class InvalidResult(ValueError):
    """The job's return value cannot be stored as its result."""

"""Errors that callers of the public API are expected to catch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from django.utils.translation import gettext


class WeftError(Exception):
    """Base class of every error django-weft raises on purpose."""


class UnknownJob(WeftError, LookupError):
    """No job of that name is registered in the code deployed in this process."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f'no job named "{name}" is registered')


class InvalidArgs(WeftError, ValueError):
    """A job's args failed its args serializer; ``errors`` maps each field to its messages."""

    def __init__(self, job: str, errors: Mapping[str, Sequence[str]]) -> None:
        self.job = job
        self.errors = {field: [str(m) for m in messages] for field, messages in errors.items()}
        details = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in self.errors.items())
        super().__init__(f'invalid args for job "{job}": {details}')


class StartRefused(WeftError):
    """A start was refused before any row was written."""


def batch_item(index: int | None) -> str:
    """`` (item 3 of the batch)`` for a refusal of a ``start_many`` item, else nothing."""
    return "" if index is None else f" (item {index} of the batch)"


class InvalidBatchItem(WeftError, ValueError):
    """An item of a ``start_many`` batch is bad input; the whole batch was refused.

    ``index`` counts from 0 in the batch; ``fields`` maps each bad field of that item
    (``args.<name>``, ``key``, ``priority``) to its messages; ``error`` is what a single
    start with that item would have raised.
    """

    def __init__(self, index: int, fields: Mapping[str, Sequence[str]], error: Exception) -> None:
        self.index = index
        self.fields = {field: [str(m) for m in messages] for field, messages in fields.items()}
        self.error = error
        named = ", ".join(self.fields)
        super().__init__(f"item {index} of the batch, {named}: {error}; nothing was started")


class ConcurrencyLimitReached(StartRefused):
    """The job already has as many unfinished runs as its concurrency limit allows."""

    def __init__(self, job: str, limit: int, key: str | None, *, index: int | None = None) -> None:
        self.job = job
        self.limit = limit
        self.key = key
        #: The item of a ``start_many`` batch that would pass the limit (None: one start).
        self.index = index
        scope = f' for key "{key}"' if key else ""
        super().__init__(
            f'job "{job}" allows {limit} unfinished run{"s" if limit != 1 else ""} at once{scope}'
            f"{batch_item(index)}; wait for one to finish or abort it"
        )


class Throttled(StartRefused):
    """The job starts at most one run per key per period, and one started within it."""

    def __init__(self, job: str, key: str, period: timedelta, next_at: datetime) -> None:
        self.job = job
        self.key = key
        self.next_at = next_at
        scope = f' for key "{key}"' if key else ""
        super().__init__(
            f'job "{job}" starts at most one run every {period}{scope}; '
            f"the next may start at {next_at.isoformat()}"
        )


class PacedBatch(StartRefused):
    """A batch start of a debounced or throttled job: such a job's runs start one at
    a time, each deciding whether it is merged or refused."""

    def __init__(self, job: str, index: int) -> None:
        self.job = job
        self.index = index
        super().__init__(
            f'job "{job}" is debounced or throttled: start its runs one at a time'
            f"{batch_item(index)}"
        )


class RunAborted(WeftError):
    """Raised inside a run by ``sleep()``/``check()`` once an abort was requested.

    It derives from :class:`Exception` so that ``finally`` blocks run as usual; a job that
    catches it and carries on is still finished as ``aborted``.
    """


class RunLost(WeftError):
    """Stands for a run that ended ``lost``: its worker stopped beating, or stopped first.

    Never raised: it names the error of such an attempt where an importable exception class
    is wanted (a ``django.tasks`` result's ``exception_class``).
    """


class RunTimedOut(WeftError, TimeoutError):
    """Stands for a run that passed its job's timeout and was stopped or given up on.

    Never raised, like :class:`RunLost`; a ``TimeoutError``, so that code which handles
    timeouts recognises it.
    """


class RunProcessDied(WeftError):
    """Stands for a run whose child process died under it (killed from outside, a crash in
    C code, the kernel's out-of-memory killer): the attempt failed with ``ProcessDied``.

    Never raised, like :class:`RunLost`; it is the error class a retry policy is asked
    about (``Retry(never=(RunProcessDied,))`` keeps such a run from being retried).
    """


class IdempotencyKeyReused(StartRefused):
    """An idempotency key came back with different args than the run it names."""

    def __init__(self, job: str, key: str, *, index: int | None = None) -> None:
        self.job = job
        self.key = key
        #: The item of a ``start_many`` batch that reused the key (None: one start).
        self.index = index
        super().__init__(
            f'idempotency key "{key}" of job "{job}" was used for a run with other args'
            f"{batch_item(index)}; use a new key for a new request"
        )


class InvalidIdempotencyKey(WeftError, ValueError):
    """An idempotency key that is blank, too long to store with its owner's scope, or
    that the database cannot store (``problem`` says why, e.g. a NUL character)."""

    def __init__(self, key: str, room: int, problem: str = "") -> None:
        self.key = key
        self.room = room
        if problem:
            super().__init__(f"idempotency key: {problem}")
            return
        reason = "must not be blank" if not key.strip() else f"is {len(key)} characters long"
        super().__init__(f"idempotency key {reason}; at most {room} characters")


class Forbidden(WeftError, PermissionError):
    """The user may not do this; the message names the permission that is missing."""

    def __init__(self, message: str, permission: str) -> None:
        self.permission = permission
        super().__init__(message)


class RunFinished(WeftError):
    """The run has already finished: it cannot be aborted or signalled any more."""

    def __init__(self, run_id: object, status: str) -> None:
        self.run_id = run_id
        self.status = status
        super().__init__(f"run {run_id} has already finished ({status})")


class RunNotFound(WeftError, LookupError):
    """No run has this id (any more): it was never started, or it was deleted."""

    def __init__(self, run_id: object) -> None:
        self.run_id = run_id
        super().__init__(gettext("there is no run %(id)s") % {"id": run_id})


class RunNotFinished(WeftError):
    """The run is still queued or running: it cannot be retried yet."""

    def __init__(self, run_id: object, status: str) -> None:
        self.run_id = run_id
        self.status = status
        super().__init__(f"run {run_id} is still {status}; abort it or wait for it to finish")


class SignalTimeout(WeftError, TimeoutError):
    """Raised inside a run by ``ctx.wait_for(name, timeout=...)`` when no signal of that
    name came in time; the job may catch it and go on (its wait is over either way)."""

    def __init__(self, name: str, until: object) -> None:
        self.name = name
        self.until = until
        super().__init__(f'no signal "{name}" came by {until}')


class InvalidSignal(WeftError, ValueError):
    """A signal's name or payload cannot be sent: ``field`` is ``name`` or ``payload``."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"signal {field}: {problem}")


class InvalidStep(WeftError, ValueError):
    """A durable step cannot be recorded: its name is blank or too long, or its function
    returned what JSON cannot store. The attempt fails with it, nothing recorded."""


class GroupClosed(WeftError):
    """The group is sealed: it takes no more members."""

    def __init__(self, group_id: object) -> None:
        self.group_id = group_id
        super().__init__(f"group {group_id} is sealed; start another group for more runs")


class InvalidWorkflowStep(WeftError, ValueError):
    """A workflow's step cannot start: its job refuses its args, or its args function
    failed. The whole workflow was refused, nothing written."""

    def __init__(self, step: str, problem: str) -> None:
        self.step = step
        self.problem = problem
        super().__init__(f"step {step}: {problem}")


class UnknownWorkflow(WeftError, LookupError):
    """No workflow of that name is defined in the code deployed in this process."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f'no workflow named "{name}" is defined')


class StepNotRetriable(WeftError):
    """A workflow's step cannot be retried now: ``problem`` says why (it has not ended,
    it ended done, or a step it depends on must be retried first)."""

    def __init__(self, step: str, problem: str) -> None:
        self.step = step
        self.problem = problem
        super().__init__(f"step {step} cannot be retried: {problem}")


class MembersFailed(WeftError):
    """A workflow's group step gathered its members and some did not end done: the
    step fails, naming how many and the first of them."""

    def __init__(self, failed: int, total: int, first: str) -> None:
        self.failed = failed
        self.total = total
        super().__init__(f"{failed} of {total} members did not end done; the first: {first}")

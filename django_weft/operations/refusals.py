"""How every entry point words a refusal, so that none of them does it on its own."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from django_weft.exceptions import (
    ConcurrencyLimitReached,
    Forbidden,
    GroupClosed,
    IdempotencyKeyReused,
    InvalidArgs,
    InvalidBatchItem,
    InvalidIdempotencyKey,
    InvalidSignal,
    InvalidWorkflowStep,
    RunFinished,
    RunNotFinished,
    RunNotFound,
    StepNotRetriable,
    Throttled,
    UnknownJob,
    UnknownWorkflow,
    WeftError,
)


def describe_refusal(error: WeftError | ValidationError) -> tuple[str, str, dict[str, list[str]]]:
    """``(code, message, fields)`` of a refusal, as every entry point shows it.

    ``code`` is ``invalid`` (bad input; ``fields`` names each bad field), ``forbidden``,
    ``finished``, ``not_finished``, ``not_found``, ``concurrency_limit``, ``throttled``,
    ``idempotency_key_reused``, ``group_closed``, ``step_not_retriable``, or ``refused``
    for any other refusal.
    """
    if isinstance(error, ValidationError):
        if not hasattr(error, "error_dict"):  # raised without naming a field
            return "invalid", "; ".join(error.messages), {}
        return "invalid", _("invalid input"), dict(error.message_dict)
    if isinstance(error, UnknownJob):
        return "invalid", str(error), {"job": [str(error)]}
    if isinstance(error, UnknownWorkflow):
        return "invalid", str(error), {"workflow": [str(error)]}
    if isinstance(error, InvalidWorkflowStep):
        return "invalid", str(error), {f"steps.{error.step}": [error.problem]}
    if isinstance(error, InvalidArgs):
        fields = {f"args.{name}": messages for name, messages in error.errors.items()}
        return "invalid", str(error), fields
    if isinstance(error, InvalidBatchItem):
        fields = {
            f"items.{error.index}.{name}": messages for name, messages in error.fields.items()
        }
        return "invalid", str(error), fields
    if isinstance(error, InvalidIdempotencyKey):
        return "invalid", str(error), {"key": [str(error)]}
    if isinstance(error, InvalidSignal):
        return "invalid", str(error), {error.field: [error.problem]}
    if isinstance(error, Forbidden):
        return "forbidden", str(error), {}
    if isinstance(error, RunFinished):
        return "finished", str(error), {}
    if isinstance(error, RunNotFinished):
        return "not_finished", str(error), {}
    if isinstance(error, RunNotFound):
        return "not_found", str(error), {}
    if isinstance(error, ConcurrencyLimitReached):
        return "concurrency_limit", str(error), {}
    if isinstance(error, Throttled):
        return "throttled", str(error), {}
    if isinstance(error, IdempotencyKeyReused):
        return "idempotency_key_reused", str(error), {}
    if isinstance(error, GroupClosed):
        return "group_closed", str(error), {}
    if isinstance(error, StepNotRetriable):
        return "step_not_retriable", str(error), {}
    return "refused", str(error), {}


#: Refusals :func:`describe_refusal` knows; entry points catch these and nothing else.
REFUSALS = (WeftError, ValidationError)

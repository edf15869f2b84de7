"""django-weft: scheduled jobs and durable job runs for Django.

The names a project writes come from here (``from django_weft import job, start``), each
loaded from the module it lives in on first use. Importing the package therefore reads no
settings and loads no models: ``django_weft.__version__`` works before ``django.setup()``,
and the package can be imported while the app registry is still loading.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django_weft.lazy_exports import load_export

__version__ = "0.2.0"

_HOMES: dict[str, str] = {
    # Writing jobs.
    "job": "django_weft.jobs.registry",
    "Job": "django_weft.jobs.registry",
    "StateSpec": "django_weft.jobs.registry",
    "RunContext": "django_weft.jobs.context",
    "Retry": "django_weft.jobs.retries",
    "OutputBuffer": "django_weft.jobs.output",
    "Throttle": "django_weft.jobs.output",
    "AsyncThrottle": "django_weft.jobs.output",
    "Outcome": "django_weft.jobs.outcomes",
    "FinishContext": "django_weft.jobs.outcomes",
    # Starting and aborting runs, changing documents.
    "start": "django_weft.operations",
    "StartRequest": "django_weft.engine.runs.starting",
    "astart": "django_weft.operations",
    "start_many": "django_weft.operations",
    "astart_many": "django_weft.operations",
    "abort": "django_weft.operations",
    "aabort": "django_weft.operations",
    "send_signal": "django_weft.operations",
    "start_group": "django_weft.operations",
    "astart_group": "django_weft.operations",
    "Callback": "django_weft.engine.flows.groups",
    "workflow": "django_weft.jobs.workflows",
    "Step": "django_weft.jobs.workflows",
    "chain": "django_weft.jobs.workflows",
    "StepOutcome": "django_weft.jobs.upstream",
    "Limit": "django_weft.jobs.limits",
    "start_workflow": "django_weft.operations",
    "astart_workflow": "django_weft.operations",
    "abort_workflow": "django_weft.operations",
    "retry_step": "django_weft.operations",
    "asend_signal": "django_weft.operations",
    "open_document": "django_weft.operations",
    "change_document": "django_weft.operations",
    "save_schedule": "django_weft.engine.schedules.saving",
    "Change": "django_weft.jobs.revisions",
    "DocumentConflict": "django_weft.jobs.revisions",
    "InvalidDocument": "django_weft.jobs.revisions",
    # A project's own tests.
    "DrivenClock": "django_weft.testing",
    "Rehearsal": "django_weft.testing",
    # The errors callers catch.
    "WeftError": "django_weft.exceptions",
    "UnknownJob": "django_weft.exceptions",
    "InvalidArgs": "django_weft.exceptions",
    "StartRefused": "django_weft.exceptions",
    "ConcurrencyLimitReached": "django_weft.exceptions",
    "IdempotencyKeyReused": "django_weft.exceptions",
    "InvalidIdempotencyKey": "django_weft.exceptions",
    "InvalidBatchItem": "django_weft.exceptions",
    "RunAborted": "django_weft.exceptions",
    "RunLost": "django_weft.exceptions",
    "RunTimedOut": "django_weft.exceptions",
    "Forbidden": "django_weft.exceptions",
    "RunFinished": "django_weft.exceptions",
    "RunNotFinished": "django_weft.exceptions",
    "SignalTimeout": "django_weft.exceptions",
    "InvalidSignal": "django_weft.exceptions",
    "InvalidStep": "django_weft.exceptions",
    "GroupClosed": "django_weft.exceptions",
    "UnknownWorkflow": "django_weft.exceptions",
    "InvalidWorkflowStep": "django_weft.exceptions",
    "StepNotRetriable": "django_weft.exceptions",
    "Throttled": "django_weft.exceptions",
    "MembersFailed": "django_weft.exceptions",
}
"""Every public name and the module it lives in: the one map of the package's face."""

__all__ = ["__version__", *_HOMES]


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use, and keep it for the next."""
    return load_export(__name__, _HOMES, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


# Type checkers cannot follow __getattr__: they read the same names from here. Keep this
# list equal to _HOMES (tests/test_public_face.py checks that it is).
if TYPE_CHECKING:
    from django_weft.engine.flows.groups import Callback as Callback
    from django_weft.engine.runs.starting import StartRequest as StartRequest
    from django_weft.engine.schedules.saving import save_schedule as save_schedule
    from django_weft.exceptions import ConcurrencyLimitReached as ConcurrencyLimitReached
    from django_weft.exceptions import Forbidden as Forbidden
    from django_weft.exceptions import GroupClosed as GroupClosed
    from django_weft.exceptions import IdempotencyKeyReused as IdempotencyKeyReused
    from django_weft.exceptions import InvalidArgs as InvalidArgs
    from django_weft.exceptions import InvalidBatchItem as InvalidBatchItem
    from django_weft.exceptions import InvalidIdempotencyKey as InvalidIdempotencyKey
    from django_weft.exceptions import InvalidSignal as InvalidSignal
    from django_weft.exceptions import InvalidStep as InvalidStep
    from django_weft.exceptions import InvalidWorkflowStep as InvalidWorkflowStep
    from django_weft.exceptions import MembersFailed as MembersFailed
    from django_weft.exceptions import RunAborted as RunAborted
    from django_weft.exceptions import RunFinished as RunFinished
    from django_weft.exceptions import RunLost as RunLost
    from django_weft.exceptions import RunNotFinished as RunNotFinished
    from django_weft.exceptions import RunTimedOut as RunTimedOut
    from django_weft.exceptions import SignalTimeout as SignalTimeout
    from django_weft.exceptions import StartRefused as StartRefused
    from django_weft.exceptions import StepNotRetriable as StepNotRetriable
    from django_weft.exceptions import Throttled as Throttled
    from django_weft.exceptions import UnknownJob as UnknownJob
    from django_weft.exceptions import UnknownWorkflow as UnknownWorkflow
    from django_weft.exceptions import WeftError as WeftError
    from django_weft.jobs.context import RunContext as RunContext
    from django_weft.jobs.limits import Limit as Limit
    from django_weft.jobs.outcomes import FinishContext as FinishContext
    from django_weft.jobs.outcomes import Outcome as Outcome
    from django_weft.jobs.output import AsyncThrottle as AsyncThrottle
    from django_weft.jobs.output import OutputBuffer as OutputBuffer
    from django_weft.jobs.output import Throttle as Throttle
    from django_weft.jobs.registry import Job as Job
    from django_weft.jobs.registry import StateSpec as StateSpec
    from django_weft.jobs.registry import job as job
    from django_weft.jobs.retries import Retry as Retry
    from django_weft.jobs.revisions import Change as Change
    from django_weft.jobs.revisions import DocumentConflict as DocumentConflict
    from django_weft.jobs.revisions import InvalidDocument as InvalidDocument
    from django_weft.jobs.upstream import StepOutcome as StepOutcome
    from django_weft.jobs.workflows import Step as Step
    from django_weft.jobs.workflows import chain as chain
    from django_weft.jobs.workflows import workflow as workflow
    from django_weft.operations import aabort as aabort
    from django_weft.operations import abort as abort
    from django_weft.operations import abort_workflow as abort_workflow
    from django_weft.operations import asend_signal as asend_signal
    from django_weft.operations import astart as astart
    from django_weft.operations import astart_group as astart_group
    from django_weft.operations import astart_many as astart_many
    from django_weft.operations import astart_workflow as astart_workflow
    from django_weft.operations import change_document as change_document
    from django_weft.operations import open_document as open_document
    from django_weft.operations import retry_step as retry_step
    from django_weft.operations import send_signal as send_signal
    from django_weft.operations import start as start
    from django_weft.operations import start_group as start_group
    from django_weft.operations import start_many as start_many
    from django_weft.operations import start_workflow as start_workflow
    from django_weft.testing import DrivenClock as DrivenClock
    from django_weft.testing import Rehearsal as Rehearsal

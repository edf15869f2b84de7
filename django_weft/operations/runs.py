"""Starting, aborting and retrying runs: the trusted calls and the checked ``*_for`` ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from asgiref.sync import sync_to_async
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_naive
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.engine.outcomes import finishing
from django_weft.engine.runs import bulk_starting, starting
from django_weft.engine.runs.starting import StartRequest
from django_weft.exceptions import (
    InvalidBatchItem,
    RunFinished,
    RunNotFinished,
    RunNotFound,
    StepNotRetriable,
)
from django_weft.jobs.registry import Job, check_priority, registry
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import (
    AuditAction,
    Document,
    Run,
    WorkflowStep,
)
from django_weft.timing import clocks

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

from django_weft.operations.base import as_owner, record, require, signed_in

#: The longest request id a socket client may send; a start's is its idempotency key.
REQUEST_ID_LENGTH = 150
#: The longest job name a client may send, as the run stores it.
JOB_NAME_LENGTH = cast(int, Run._meta.get_field("job").max_length)
#: The longest queue name a client may send, as the run stores it.
QUEUE_NAME_LENGTH = cast(int, Run._meta.get_field("queue").max_length)
#: The fields a start's input may have (a socket's frame adds its ``request_id``).
START_FIELDS = ("job", "args", "priority", "queue", "not_before")
#: A moment as a start's ``not_before`` takes it, for its error messages.
_EXAMPLE_MOMENT = "2026-01-31T09:00:00Z or 2026-01-31T10:00:00+01:00"


def parse_start(
    user: User, data: object, *, key: str | None = None, key_field: str | None = None
) -> StartRequest:
    """The start ``user`` asks for with ``data``: ``{"job": <name>, "args": {...}}``,
    optionally ``priority``, ``queue`` and ``not_before``.

    The one check of a start's input, for the API's body and the socket's frame alike.
    First it refuses a ``user`` who may not start runs (:func:`require_start`), so that
    nothing about the job is looked up for them. ``args`` may be left out (no args); a
    field it does not know is refused, naming the ones it does, as the run list refuses
    an unknown filter. ``priority`` is a whole number from -100 to 100 (it only orders
    claims); ``queue`` is the job's own, or any queue for a user with
    ``django_weft.pause_queue`` (see docs/design-decisions.md); ``not_before`` is an
    ISO 8601 moment with its offset, before which no worker claims the run. The
    idempotency key is ``key`` (the API's comes in a header) or, with ``key_field``,
    that field of ``data``, which is then required (a socket's ``request_id``).

    Raises :class:`~django_weft.exceptions.Forbidden`, then ``ValidationError`` naming
    every bad field, then :class:`~django_weft.exceptions.UnknownJob` for a job this
    process does not have, then ``ValidationError`` for a queue the job and the user do
    not allow. The owner is left out: the checked call that starts it
    (:func:`start_for`) sets it.
    """
    require_start(user)
    if not isinstance(data, Mapping):
        raise ValidationError(
            {NON_FIELD_ERRORS: [f"Expected an object, but got {type(data).__name__}."]}
        )
    accepted = sorted({*START_FIELDS, *([key_field] if key_field is not None else [])})
    errors: dict[str, list[str]] = {
        str(name): [f"Unknown field; a start accepts: {', '.join(accepted)}."]
        for name in data
        if name not in accepted
    }
    job = _text(data, "job", JOB_NAME_LENGTH, errors)
    args = data.get("args", {})
    if args is None:
        errors["args"] = ["This field may not be null."]
    elif not isinstance(args, Mapping):
        errors["args"] = [f'Expected a dictionary of items but got type "{type(args).__name__}".']
    priority = _priority(data, errors)
    queue = _text(data, "queue", QUEUE_NAME_LENGTH, errors) if "queue" in data else None
    not_before = _moment(data, "not_before", errors)
    if key_field is not None:
        key = _text(data, key_field, REQUEST_ID_LENGTH, errors)
    if errors:
        raise ValidationError(errors)
    assert job is not None
    chosen = registry.get(job)
    if queue is not None:
        _check_queue(user, chosen, queue)
    return StartRequest(
        chosen, args, key=key, priority=priority, queue=queue, not_before=not_before
    )


def _text(
    data: Mapping[str, Any], name: str, longest: int, errors: dict[str, list[str]]
) -> str | None:
    """The required text field ``name`` of ``data``, trimmed; its problem goes to ``errors``."""
    value = data.get(name)
    if name not in data:
        errors[name] = ["This field is required."]
    elif value is None:
        errors[name] = ["This field may not be null."]
    elif not isinstance(value, str):
        errors[name] = [f"Expected text, not {type(value).__name__}."]
    elif not value.strip():
        errors[name] = ["This field may not be blank."]
    elif len(value.strip()) > longest:
        errors[name] = [f"Ensure this field has no more than {longest} characters."]
    else:
        return value.strip()
    return None


def _priority(data: Mapping[str, Any], errors: dict[str, list[str]]) -> int | None:
    """The ``priority`` of ``data`` if given (None: the job's); its problem goes to ``errors``."""
    if "priority" not in data:
        return None
    value = data["priority"]
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "null" if value is None else type(value).__name__
        errors["priority"] = [f"Expected a whole number, not {kind}."]
        return None
    try:
        return check_priority(value)
    except ValueError as error:
        errors["priority"] = [str(error)]
    return None


def _moment(data: Mapping[str, Any], name: str, errors: dict[str, list[str]]) -> datetime | None:
    """The moment ``name`` of ``data`` if given, in UTC; its problem goes to ``errors``.

    ISO 8601 text with its offset (``Z``, ``+02:00``): a moment without one would be
    read in some zone the client did not choose.
    """
    if name not in data:
        return None
    value = data[name]
    if not isinstance(value, str):
        kind = "null" if value is None else type(value).__name__
        errors[name] = [f"Expected an ISO 8601 moment as text, not {kind}."]
        return None
    try:
        moment = parse_datetime(value.strip())
        if moment is not None and not is_naive(moment):
            return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        moment = None
    if moment is None:
        errors[name] = [f"Expected an ISO 8601 moment, such as {_EXAMPLE_MOMENT}."]
    else:
        errors[name] = [f"Give the moment's offset from UTC, such as {_EXAMPLE_MOMENT}."]
    return None


def _check_queue(user: User, job: Job, queue: str) -> None:
    """Refuse ``queue`` for a start of ``job`` by ``user``, unless the job allows it.

    The job's own queue is always allowed; another one needs ``pause_queue``, held by
    the operators who decide which queues run: a queue decides which workers (and, for a
    job that names no executor, which executor) take the run.
    """
    if queue == job.queue or user.has_perm(access.PAUSE_QUEUE):
        return
    problem = (
        f'Job "{job.name}" runs on queue "{job.queue}"; another queue needs {access.PAUSE_QUEUE}.'
    )
    raise ValidationError({"queue": [problem]})


# Trusted calls: the caller has decided who may do this.
def start(
    job: Job | str,
    args: Mapping[str, Any] | None = None,
    *,
    key: str | None = None,
    owner: AbstractBaseUser | None = None,
    priority: int | None = None,
) -> Run:
    """Start a run of ``job`` (a job or its name) and return it at once, queued.

    Raises :class:`~django_weft.exceptions.UnknownJob`,
    :class:`~django_weft.exceptions.InvalidArgs` and
    :class:`~django_weft.exceptions.StartRefused` (concurrency limit, reused key); then
    nothing is written. With ``key`` a resent start returns the run the first one made
    (keys are the owner's own: two owners' equal keys name two runs).
    """
    chosen = registry.get(job) if isinstance(job, str) else job
    request = StartRequest(chosen, args, key=key, owner=owner, priority=priority)
    return start_or_get(request)[0]


def start_or_get(request: StartRequest) -> tuple[Run, bool]:
    """Start the run ``request`` asks for, as :func:`start` does; also say whether this
    call made it (False: its key named a run an earlier start made)."""
    run, created = starting.start_or_get(request, now=clocks.now())
    publish_run(run)
    return run, created


astart = sync_to_async(start)


def start_many(
    job: Job | str,
    items: Sequence[Mapping[str, Any] | None],
    *,
    keys: Sequence[str | None] | None = None,
    owner: AbstractBaseUser | None = None,
    priority: int | None = None,
) -> list[Run]:
    """Start a run of ``job`` for each args of ``items`` at once, in one transaction.

    What :func:`start` is for one run, for a fan-out: the runs come back in the items'
    order, queued, and are written with one INSERT. ``keys`` (as long as ``items``,
    None for an item without one) are the items' idempotency keys, answered as
    :func:`start` answers one. A bad item refuses the whole batch, naming its index:
    :class:`~django_weft.exceptions.InvalidBatchItem`,
    :class:`~django_weft.exceptions.IdempotencyKeyReused`,
    :class:`~django_weft.exceptions.ConcurrencyLimitReached`; then nothing is written.
    """
    chosen = registry.get(job) if isinstance(job, str) else job
    if keys is not None and len(keys) != len(items):
        raise ValueError(f"keys has {len(keys)} items and items {len(items)}; give one per item")
    requests = []
    for index, args in enumerate(items):
        key = None if keys is None else keys[index]
        try:
            requests.append(StartRequest(chosen, args, key=key, owner=owner, priority=priority))
        except ValueError as error:
            raise InvalidBatchItem(index, {"priority": [str(error)]}, error) from error
    return [run for run, _ in start_many_or_get(requests)]


def start_many_or_get(requests: Sequence[StartRequest]) -> list[tuple[Run, bool]]:
    """Start the runs ``requests`` ask for, as :func:`start_many` does; also say of each
    whether this call made it (False: its key named an earlier run)."""
    answers = bulk_starting.start_many(requests, now=clocks.now())
    changes = Changes()
    for run, _created in answers:
        changes.run(run.pk)
    publisher.publish(changes)
    return answers


astart_many = sync_to_async(start_many)


def abort(run: Run) -> bool:
    """Request an abort. A run no worker has claimed (queued or blocked) ends at once.

    Returns False when the run had already finished, or its abort was requested before.
    """
    changes = Changes()
    requested = finishing.abort(run, now=clocks.now(), changes=changes)
    publisher.publish(changes)
    return requested


aabort = sync_to_async(abort)


def publish_run(run: Run) -> None:
    changes = Changes()
    changes.run(run.pk)
    publisher.publish(changes)


# Checked calls: for a user whose rights are checked here.


def require_start(user: User) -> None:
    """Refuse unless ``user`` may start runs."""
    signed_in(user)
    require(access.may_start_runs(user), _("start runs"), access.ADD_RUN)


def start_for(user: User, request: StartRequest) -> tuple[Run, bool]:
    """Start ``request`` as ``user``, who owns the run; False for a resent key."""
    with transaction.atomic():
        run, created = _start_as(user, request)
        if created:
            record(user, AuditAction.START, run, text="Started")
    return run, created


def start_many_for(user: User, requests: Sequence[StartRequest]) -> list[tuple[Run, bool]]:
    """Start ``requests`` as ``user``, who owns the runs; False for each resent key."""
    require_start(user)
    owner = as_owner(user)
    with transaction.atomic():
        answers = start_many_or_get([replace(request, owner=owner) for request in requests])
        for run, created in answers:
            if created:
                record(user, AuditAction.START, run, text="Started")
    return answers


def _start_as(user: User, request: StartRequest) -> tuple[Run, bool]:
    require_start(user)
    return start_or_get(replace(request, owner=as_owner(user)))


def abort_for(user: User, run: Run) -> bool:
    """Request an abort of ``run``; False when it was requested before and still stands.

    Raises :class:`~django_weft.exceptions.RunFinished` for a run that has finished.
    """
    require(
        access.may_abort_run(user, run),
        _("abort run %(run)s") % {"run": run.pk},
        access.CHANGE_RUN,
        or_owner=True,
    )
    with transaction.atomic():
        requested = abort(run)
        if requested:
            record(user, AuditAction.ABORT, run, text="Requested an abort")
    if requested:
        return True
    run.refresh_from_db(fields=["status"])
    if run.is_finished:
        raise RunFinished(run.pk, run.status)
    return False


def retry_for(user: User, run: Run) -> Run:
    """A new run of ``run``'s job with its args, started by (and owned by) ``user``.

    Needs to see the run in full (its args are reused) and to start runs; the run must
    have finished. The new run links to ``run`` (``retry_of``) and keeps its schedule.
    """
    require(
        access.sees_run_in_full(user, run),
        _("retry run %(run)s") % {"run": run.pk},
        access.VIEW_RUN,
        or_owner=True,
    )
    if not run.is_finished:
        raise RunNotFinished(run.pk, run.status)
    if run.workflow_id is not None:
        # A loose copy would run outside its workflow, whose steps after it would never
        # hear of it: a step is retried as a step.
        step = WorkflowStep.objects.filter(run=run).values_list("name", flat=True).first()
        raise StepNotRetriable(
            step or run.job,
            f"run {run.pk} is a step of workflow {run.workflow_id}: retry the step there",
        )
    again = StartRequest(registry.get(run.job), run.args, priority=run.priority, retry_of=run)
    with transaction.atomic():
        retried, _started = _start_as(user, again)
        made = {"run": str(retried.pk)}
        record(user, AuditAction.RETRY, run, text=f"Retried as run {retried.pk}", details=made)
    return retried


def delete_run_for(user: User, run: Run) -> None:
    """Delete ``run`` (with its attempts; its state document goes with it).

    Needs to own the run or ``django_weft.delete_run``; the run must have finished, so no
    worker is executing what is deleted. Runs that retried it keep their place, with no
    link back. The deletion is on record, under the run's id. Live watchers are not told:
    a deleted run is not published, as a pruned one is not.
    """
    require(
        access.may_delete_run(user, run),
        f"delete run {run.pk}",
        access.DELETE_RUN,
        or_owner=True,
    )
    with transaction.atomic():
        locked = Run.objects.select_for_update().filter(pk=run.pk).first()
        if locked is None:
            raise RunNotFound(run.pk)
        if not locked.is_finished:
            raise RunNotFinished(run.pk, locked.status)
        record(user, AuditAction.RUN_DELETE, locked, text="Deleted")
        state = locked.state_id
        locked.delete()
        if state is not None:
            Document.objects.filter(pk=state).delete()

"""The bulk start: many runs in one transaction and one INSERT, for fan-out.

:func:`start_many` answers a batch of :class:`~django_weft.engine.runs.starting.StartRequest`
as that many :func:`~django_weft.engine.runs.starting.start_or_get` calls would, in their
order, but with a few statements for the whole batch instead of a few per run:

- every item is checked first, as a start checks one (args against the job's
  serializer, key, priority); a bad item refuses the whole batch with
  :class:`~django_weft.exceptions.InvalidBatchItem`, naming its index and fields, and
  nothing is written;
- a key that an earlier run holds answers that run, as a resent start does, and an item
  whose key an earlier item of the batch holds answers that item's run (other args:
  :class:`~django_weft.exceptions.IdempotencyKeyReused`, naming the item);
- a job's concurrency limit counts the unfinished runs of each concurrency key, under
  the same lock a single start takes, plus the batch's own new runs: a batch that would
  pass a limit is refused whole (:class:`~django_weft.exceptions.ConcurrencyLimitReached`,
  naming the first item over it);
- the new rows go in with one INSERT for up to
  :data:`~django_weft.engine.runs.starting.BULK_INSERT_ROWS` runs (as a single start writes
  its one); on PostgreSQL the statement trigger's NOTIFY then wakes the workers once per
  batch, since PostgreSQL folds equal notifications of one transaction into one.

Nothing here publishes: the caller does, after the commit, once per run.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from django_weft import tracing
from django_weft.engine.runs.pacing import paced
from django_weft.engine.runs.starting import (
    BULK_INSERT_ROWS,
    StartRequest,
    announce_started,
    new_run,
    scoped_key,
    serialize_starts,
    write_runs,
)
from django_weft.exceptions import (
    ConcurrencyLimitReached,
    IdempotencyKeyReused,
    InvalidArgs,
    InvalidBatchItem,
    InvalidIdempotencyKey,
    PacedBatch,
)
from django_weft.jobs.revisions import storable
from django_weft.models import Document, Run

logger = logging.getLogger("django_weft.runs")


@dataclass(frozen=True, slots=True)
class _Item:
    """One checked item of a batch: its request, stored args and keys."""

    index: int
    request: StartRequest
    stored: dict[str, Any]
    key: str | None
    concurrency_key: str


def start_many(requests: Sequence[StartRequest], *, now: datetime) -> list[tuple[Run, bool]]:
    """Start every run ``requests`` ask for, in one transaction of its own.

    Returns, in the requests' order, each item's run and whether this call made it
    (False: its key named a run an earlier start, or an earlier item, made). Raises
    :class:`~django_weft.exceptions.InvalidBatchItem`,
    :class:`~django_weft.exceptions.IdempotencyKeyReused` and
    :class:`~django_weft.exceptions.ConcurrencyLimitReached`, and then writes nothing.
    """
    items = [_check(index, request) for index, request in enumerate(requests)]
    with tracing.span("weft.start", {"weft.runs": len(items)}):
        try:
            with transaction.atomic():
                return _start(items, now)
        except IntegrityError:
            # A start with one of the batch's keys committed between the look-up and
            # the insert: the batch is answered again, now with that run as existing.
            if not any(item.key is not None for item in items):
                raise
            with transaction.atomic():
                return _start(items, now)


def insert_many(requests: Sequence[StartRequest], *, now: datetime) -> list[Run]:
    """Write new runs for ``requests`` (none with an idempotency key) into the caller's
    transaction, as :func:`start_many` writes them: a group's members, which exist only
    if the group does. Raises as :func:`start_many` does, before writing anything."""
    items = [_check(index, request) for index, request in enumerate(requests)]
    assert all(item.key is None for item in items), "keyed runs go through start_many"
    return [run for run, _ in _start(items, now)]


def _check(index: int, request: StartRequest) -> _Item:
    """Item ``index`` checked as a start checks one; InvalidBatchItem naming what is bad."""
    job, owner = request.job, request.owner
    if paced(job):
        raise PacedBatch(job.name, index)
    try:
        stored = job.validate_args(request.args, owner=owner)
    except InvalidArgs as error:
        fields = {f"args.{name}": messages for name, messages in error.errors.items()}
        raise InvalidBatchItem(index, fields, error) from error
    try:
        key = None if request.key is None else scoped_key(request.key, owner)
    except InvalidIdempotencyKey as error:
        raise InvalidBatchItem(index, {"key": [str(error)]}, error) from error
    concurrency_key = ""
    if job.concurrency_key is not None:
        concurrency_key = job.concurrency_key(stored, owner) or ""
    return _Item(index, request, stored, key, concurrency_key)


def _start(items: Sequence[_Item], now: datetime) -> list[tuple[Run, bool]]:
    limited = sorted(
        {(i.request.job.name, i.concurrency_key) for i in items if i.request.job.concurrency}
    )
    for job_name, concurrency_key in limited:  # sorted: two batches lock in one order
        serialize_starts(job_name, concurrency_key)
    #: (job, stored key) -> the run that holds it and the args it was started with.
    holders = {keyed: (run, run.args) for keyed, run in _runs_for_keys(items).items()}
    answers: list[tuple[Run, bool]] = []
    new: list[tuple[_Item, Run]] = []
    for item in items:
        job = item.request.job
        keyed = None if item.key is None else (job.name, item.key)
        if keyed is not None and keyed in holders:
            holder, args = holders[keyed]
            if args != item.stored:
                raise IdempotencyKeyReused(job.name, item.request.key or "", index=item.index)
            answers.append((holder, False))
            continue
        run = _new_run(item, now)
        if keyed is not None:
            holders[keyed] = (run, item.stored)
        new.append((item, run))
        answers.append((run, True))
    _check_limits(new)
    _insert(new)
    if new:
        logger.debug("started %d runs in one batch", len(new))
    announce_started([run for _, run in new])
    return answers


def _new_run(item: _Item, now: datetime) -> Run:
    request, job = item.request, item.request.job
    return new_run(
        job,
        item.stored,
        owner=request.owner,
        slot=None,
        now=now,
        priority=job.priority if request.priority is None else request.priority,
        key=item.key,
        concurrency_key=item.concurrency_key,
        queue=request.queue,
        not_before=request.not_before,
        retry_of=request.retry_of,
        group=request.group,
    )


def _runs_for_keys(items: Sequence[_Item]) -> dict[tuple[str, str], Run]:
    """The runs that already hold the batch's keys, by (job, stored key): one query."""
    keys = {item.key for item in items if item.key is not None}
    if not keys:
        return {}
    jobs = {item.request.job.name for item in items if item.key is not None}
    found = Run.objects.filter(job__in=jobs, idempotency_key__in=keys)
    return {(run.job, run.idempotency_key): run for run in found if run.idempotency_key}


def _check_limits(new: Sequence[tuple[_Item, Run]]) -> None:
    """Refuse the batch if its new runs would pass a job's concurrency limit."""
    counted: Counter[tuple[str, str]] = Counter()
    for item, _ in new:
        job = item.request.job
        if job.concurrency is None:
            continue
        group = (job.name, item.concurrency_key)
        if group not in counted:
            unfinished = Run.objects.unfinished().filter(
                job=job.name, concurrency_key=item.concurrency_key
            )
            counted[group] = unfinished.count()
        counted[group] += 1
        if counted[group] > job.concurrency:
            raise ConcurrencyLimitReached(
                job.name, job.concurrency, item.concurrency_key or None, index=item.index
            )


def _insert(new: Sequence[tuple[_Item, Run]]) -> None:
    """Write the new runs and their state documents, one INSERT per table for the batch."""
    documents = {
        run.id: Document(
            key=f"run:{run.id}",
            schema=spec.name,
            version=spec.version,
            data=storable(f"run:{run.id}", spec.initial()),
        )
        for item, run in new
        if (spec := item.request.job.state) is not None
    }
    # Both databases return the new ids, so the runs below can point at their documents.
    Document.objects.bulk_create(documents.values(), batch_size=BULK_INSERT_ROWS)
    for _, run in new:
        if (document := documents.get(run.id)) is not None:
            run.state = document
    write_runs([run for _, run in new])

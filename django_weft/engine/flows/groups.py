"""Groups: many runs started together, and a callback once the last of them ended.

A group is a row (:class:`~django_weft.models.Group`) with counters. Its members are
ordinary runs pointing at it; each member's finish (:func:`members_ended`, called by the
finish step in its transaction, for a worker's round of members at once) takes one from
``unfinished`` and adds one to its outcome, under the group's row lock. The transaction
that takes ``unfinished`` to zero in a sealed group starts the callback, in the same
transaction: exactly once, however many workers finish members at the same moment, and
not at all if that finish rolls back (it is then done again with the retried finish). A
retried member has not ended: only its last attempt counts.

A group may be built in batches: :func:`start_group` with ``sealed=False``, then
:func:`add_members` as often as needed, then :func:`seal`. Until it is sealed its
callback does not start, even when every member so far has ended.

A group whose callback run exists before it ends (a workflow's group step: the step's
run, ``waiting``) has that run queued when it ends, not a new one started; such a group
may have its members that did not end done started again (:func:`retry_members`).
"""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from django.db import connection, transaction
from django.db.models import F

from django_weft.engine.database import sql
from django_weft.engine.flows.keys import insert_keyed, started_before
from django_weft.engine.runs.bulk_starting import insert_many
from django_weft.engine.runs.starting import StartRequest, insert_run, scoped_key
from django_weft.exceptions import GroupClosed, InvalidBatchItem
from django_weft.jobs.registry import Job, registry
from django_weft.live.changes import Changes
from django_weft.models import Group, GroupCondition, Run, RunStatus
from django_weft.signals import group_ended

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

#: The outcome counter each way a member can end adds to.
COUNTERS = {
    RunStatus.DONE: "done",
    RunStatus.FAILED: "failed",
    RunStatus.ABORTED: "aborted",
    RunStatus.LOST: "lost",
}


@dataclass(frozen=True)
class Callback:
    """A job a group starts when it ends, with args of its own; the callback run gets
    the group's id as its ``group`` arg besides them."""

    job: Job
    args: Mapping[str, Any] = field(default_factory=dict)


def start_group(
    members: Sequence[StartRequest],
    *,
    now: datetime,
    changes: Changes,
    owner: AbstractBaseUser | None = None,
    name: str = "",
    callback: Callback | None = None,
    on_failure: Callback | None = None,
    condition: GroupCondition = GroupCondition.ALL_ENDED,
    key: str | None = None,
    sealed: bool = True,
) -> tuple[Group, bool]:
    """Start ``members`` as one group, and the group itself, in one transaction: all of
    it or nothing. The members are ``owner``'s. With ``key``, a group started before
    with that key (the owner's own) is returned as it is, and False.

    Raises what a start refuses (bad args, a concurrency limit), naming the member,
    before anything is written.
    """
    stored_key = None if key is None else scoped_key(key, owner)
    with transaction.atomic():
        existing = started_before(Group, stored_key)
        if existing is not None:
            return existing, False
        group, made = insert_keyed(
            Group(
                name=name,
                owner=cast(Any, owner),
                idempotency_key=stored_key,
                condition=condition,
                callback_job=callback.job.name if callback is not None else "",
                callback_args=_callback_args(callback, owner),
                failure_job=on_failure.job.name if on_failure is not None else "",
                failure_args=_callback_args(on_failure, owner),
                created_at=now,
            )
        )
        if not made:
            return group, False
        _add(group, members, now, changes)
        if sealed:
            seal(group, now=now, changes=changes)
    return group, True


def add_members(
    group: Group, members: Sequence[StartRequest], *, now: datetime, changes: Changes
) -> list[Run]:
    """Start ``members`` into ``group``, which must still be open (:class:`GroupClosed`
    otherwise), in one transaction."""
    with transaction.atomic():
        locked = Group.objects.select_for_update().get(pk=group.pk)
        if locked.is_sealed:
            raise GroupClosed(group.pk)
        runs = _add(locked, members, now, changes)
    group.refresh_from_db()
    return runs


def seal(group: Group, *, now: datetime, changes: Changes) -> bool:
    """Seal ``group``: it takes no more members, and if every member has ended already,
    it ends now (its callback starts). False if it was sealed before."""
    with transaction.atomic():
        sealed = Group.objects.filter(pk=group.pk, sealed_at__isnull=True).update(sealed_at=now)
        if sealed:
            locked = Group.objects.select_for_update().get(pk=group.pk)
            if locked.unfinished == 0:
                _end(locked, now, changes)
    group.refresh_from_db()
    return bool(sealed)


def members_ended(runs: Sequence[Run], now: datetime, changes: Changes) -> None:
    """Count the ends of ``runs``, members of groups finished together (a worker's round
    of plain finishes), in the caller's transaction: one update a group, not one a
    member, so that a group drains as fast as plain runs. The groups are updated in the
    order of their ids, so that two workers' rounds never wait for each other in a
    circle. Each update holds its group's row lock until the caller commits: the
    transaction that reads zero ends its group, and it is the only one that does."""
    counts: dict[uuid.UUID, Counter[str]] = defaultdict(Counter)
    for run in runs:
        counter = COUNTERS.get(RunStatus(run.status))
        if counter is not None and run.group_id is not None:
            counts[run.group_id][counter] += 1
    for group_id in sorted(counts):
        if _count_ends(group_id, counts[group_id]):
            _end(Group.objects.get(pk=group_id), now, changes)


def retry_members(
    group: Group, *, callback_run: Run, now: datetime, changes: Changes
) -> dict[uuid.UUID, Run]:
    """Start again, in the caller's transaction, each member of the ended ``group`` that
    did not end done, and make ``callback_run`` the run its end queues: the group ends
    again when the new members have. The earlier runs leave the group (each new run
    links to the one it retries). Returns the new runs by the ids of those they replace.
    """
    locked = Group.objects.select_for_update().get(pk=group.pk)
    again = list(
        Run.objects.filter(group=locked)
        .exclude(status=RunStatus.DONE)
        .select_related("owner")
        .order_by("pk")
    )
    Run.objects.filter(pk__in=[run.pk for run in again]).update(group=None)
    Group.objects.filter(pk=locked.pk).update(
        ended_at=None,
        callback_run=callback_run,
        total=F("total") - len(again),
        failed=0,
        aborted=0,
        lost=0,
    )
    requests = [
        StartRequest(
            registry.get(run.job), run.args, owner=run.owner, priority=run.priority, retry_of=run
        )
        for run in again
    ]
    runs = _add(locked, requests, now, changes)
    if not runs:
        _end(Group.objects.get(pk=locked.pk), now, changes)
    return {old.pk: new for old, new in zip(again, runs, strict=True)}


def _count_ends(group_id: uuid.UUID, ended: Counter[str]) -> bool:
    """Take ``ended`` from the group's unfinished members and add it to their outcomes,
    in one statement that also says whether that ended the group (none unfinished, the
    group sealed and not ended before): a round trip a group, not two."""
    unfinished = sql.column(Group, "unfinished")
    assignments = [f"{unfinished} = {unfinished} - %s"]
    params: list[Any] = [ended.total()]
    for name, count in sorted(ended.items()):
        assignments.append(f"{sql.column(Group, name)} = {sql.column(Group, name)} + %s")
        params.append(count)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {sql.table(Group)} SET {', '.join(assignments)} "
            f"WHERE {sql.column(Group, 'id')} = %s RETURNING {unfinished}, "
            f"{sql.column(Group, 'sealed_at')}, {sql.column(Group, 'ended_at')}",
            [*params, sql.prep(Group, "id", group_id)],
        )
        found = cursor.fetchone()
    return found is not None and found[0] == 0 and found[1] is not None and found[2] is None


def _add(
    group: Group, members: Sequence[StartRequest], now: datetime, changes: Changes
) -> list[Run]:
    for index, member in enumerate(members):
        if member.key is not None:
            problem = "a group's members take no idempotency key: the group's key is theirs"
            raise InvalidBatchItem(index, {"key": [problem]}, ValueError(problem))
    requests = [
        replace(member, group=group, owner=member.owner or group.owner) for member in members
    ]
    runs = insert_many(requests, now=now)
    Group.objects.filter(pk=group.pk).update(
        total=F("total") + len(runs), unfinished=F("unfinished") + len(runs)
    )
    for run in runs:
        changes.run(run.pk)
    return runs


def _end(group: Group, now: datetime, changes: Changes) -> None:
    """End ``group`` (its row locked by the caller): mark it, and start its callback
    (or queue the one made before)."""
    Group.objects.filter(pk=group.pk).update(ended_at=now)
    failed = group.failed + group.aborted + group.lost > 0
    transaction.on_commit(partial(_announce, group.pk, "failed" if failed else "done"))
    if group.callback_run_id is not None:
        Run.objects.filter(pk=group.callback_run_id, status=RunStatus.WAITING).update(
            status=RunStatus.QUEUED
        )
        changes.run(group.callback_run_id)
        return
    use_failure = group.condition == GroupCondition.ALL_DONE and failed
    job_name = group.failure_job if use_failure else group.callback_job
    if not job_name:
        return
    args = group.failure_args if use_failure else group.callback_args
    callback = insert_run(
        StartRequest(registry.get(job_name), {**args, "group": str(group.pk)}, owner=group.owner),
        now=now,
    )
    Group.objects.filter(pk=group.pk).update(callback_run=callback)
    changes.run(callback.pk)


def _callback_args(callback: Callback | None, owner: AbstractBaseUser | None) -> dict[str, Any]:
    """The callback's args as stored, checked now (with the ``group`` arg it will get),
    so that a group whose callback could never start is refused before it begins."""
    if callback is None:
        return {}
    probe = {**callback.args, "group": "00000000-0000-4000-8000-000000000000"}
    stored = callback.job.validate_args(probe, owner=owner)
    stored.pop("group", None)
    return stored


def _announce(group_id: uuid.UUID, outcome: str) -> None:
    ended = Group.objects.filter(pk=group_id).first()
    if ended is not None:
        group_ended.send_robust(sender=Group, group=ended, outcome=outcome)

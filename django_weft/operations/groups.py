"""Groups of runs (fan-out, then a callback): the trusted calls and the checked
``*_for`` ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.engine.flows import groups
from django_weft.engine.flows.groups import Callback
from django_weft.engine.outcomes import finishing
from django_weft.engine.runs.starting import StartRequest
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import AuditAction, Group, GroupCondition, Run
from django_weft.operations.base import as_owner, record, require
from django_weft.operations.runs import require_start
from django_weft.timing import clocks

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


def start_group(
    members: Sequence[StartRequest],
    *,
    owner: AbstractBaseUser | None = None,
    name: str = "",
    callback: Callback | None = None,
    on_failure: Callback | None = None,
    condition: GroupCondition | str = GroupCondition.ALL_ENDED,
    key: str | None = None,
    sealed: bool = True,
) -> Group:
    """Start ``members`` and a group around them in one transaction, as the deployment
    (or as ``owner``): see :mod:`django_weft.engine.flows.groups`. With ``key``, a
    group started before with that key is returned instead of a new one."""
    group, _started = _start(
        members,
        owner=owner,
        name=name,
        callback=callback,
        on_failure=on_failure,
        condition=condition,
        key=key,
        sealed=sealed,
    )
    return group


def _start(
    members: Sequence[StartRequest],
    *,
    owner: AbstractBaseUser | None,
    name: str,
    callback: Callback | None,
    on_failure: Callback | None,
    condition: GroupCondition | str,
    key: str | None,
    sealed: bool,
) -> tuple[Group, bool]:
    changes = Changes()
    started = groups.start_group(
        members,
        now=clocks.now(),
        changes=changes,
        owner=owner,
        name=name,
        callback=callback,
        on_failure=on_failure,
        condition=GroupCondition(condition),
        key=key,
        sealed=sealed,
    )
    publisher.publish(changes)
    return started


astart_group = sync_to_async(start_group)


def add_to_group(group: Group, members: Sequence[StartRequest]) -> list[Run]:
    """Start ``members`` into ``group``, which must still be open."""
    changes = Changes()
    runs = groups.add_members(group, members, now=clocks.now(), changes=changes)
    publisher.publish(changes)
    return runs


def seal_group(group: Group) -> bool:
    """Seal ``group``; its callback starts once every member has ended (at once if all
    have). False if it was sealed before."""
    changes = Changes()
    sealed = groups.seal(group, now=clocks.now(), changes=changes)
    publisher.publish(changes)
    return sealed


def abort_group(group: Group) -> int:
    """Seal ``group`` and request an abort of each of its unfinished members; how many
    were asked. Members no worker holds end at once; running ones at their next check."""
    changes = Changes()
    now = clocks.now()
    with transaction.atomic():
        groups.seal(group, now=now, changes=changes)
        asked = sum(
            finishing.abort(run, now=now, changes=changes)
            for run in Run.objects.filter(group=group).unfinished().order_by("created_at", "pk")
        )
    publisher.publish(changes)
    group.refresh_from_db()
    return asked


# Checked calls.


def start_group_for(
    user: User,
    members: Sequence[StartRequest],
    *,
    name: str = "",
    callback: Callback | None = None,
    on_failure: Callback | None = None,
    condition: GroupCondition | str = GroupCondition.ALL_ENDED,
    key: str | None = None,
    sealed: bool = True,
) -> Group:
    """:func:`start_group` as ``user``, who owns the group, its members and its callback;
    needs ``add_run``. On the audit trail once, with the number of members."""
    require_start(user)
    owner = as_owner(user)
    with transaction.atomic():
        group, started = _start(
            [replace(member, owner=owner) for member in members],
            owner=owner,
            name=name,
            callback=callback,
            on_failure=on_failure,
            condition=condition,
            key=key,
            sealed=sealed,
        )
        if started:
            record(
                user,
                AuditAction.GROUP_START,
                group,
                text=f"Started a group of {group.total} runs",
                details={"members": group.total},
            )
    return group


def add_to_group_for(user: User, group: Group, members: Sequence[StartRequest]) -> list[Run]:
    """:func:`add_to_group` as ``user``: the group's owner or ``change_run``, who may
    start runs; the new members are the group's owner's."""
    require_start(user)
    _require_change(user, group, _("add to group %(group)s"))
    owner = group.owner
    with transaction.atomic():
        runs = add_to_group(group, [replace(member, owner=owner) for member in members])
        record(
            user,
            AuditAction.GROUP_ADD,
            group,
            text=f"Added {len(runs)} runs",
            details={"members": len(runs)},
        )
    return runs


def seal_group_for(user: User, group: Group) -> bool:
    """:func:`seal_group` as ``user``: the group's owner or ``change_run``."""
    _require_change(user, group, _("seal group %(group)s"))
    with transaction.atomic():
        sealed = seal_group(group)
        if sealed:
            record(user, AuditAction.GROUP_SEAL, group, text="Sealed")
    return sealed


def abort_group_for(user: User, group: Group) -> int:
    """:func:`abort_group` as ``user``: the group's owner or ``change_run``."""
    _require_change(user, group, _("abort group %(group)s"))
    with transaction.atomic():
        asked = abort_group(group)
        record(
            user,
            AuditAction.GROUP_ABORT,
            group,
            text=f"Requested an abort of {asked} runs",
            details={"members": asked},
        )
    return asked


def _require_change(user: User, group: Group, verb: str) -> None:
    require(
        access.may_change_group(user, group),
        verb % {"group": group.pk},
        access.CHANGE_RUN,
        or_owner=True,
    )

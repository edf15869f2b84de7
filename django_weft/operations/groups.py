"""Groups of runs (fan-out, then a callback): the trusted calls and the checked
``*_for`` ones."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, cast

from asgiref.sync import sync_to_async
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.engine.flows import groups
from django_weft.engine.flows.groups import Callback
from django_weft.engine.outcomes import finishing
from django_weft.engine.runs.starting import StartRequest
from django_weft.exceptions import InvalidBatchItem, UnknownJob
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import AuditAction, Group, GroupCondition, Run
from django_weft.operations.base import as_owner, record, require
from django_weft.operations.runs import parse_start, require_start
from django_weft.timing import clocks

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


#: The fields a group's input may have.
GROUP_FIELDS = ("name", "members", "callback", "on_failure", "condition", "sealed")
#: The longest group name (the column's width).
GROUP_NAME_LENGTH = cast(int, Group._meta.get_field("name").max_length)
#: The most members one request may start (a bigger group is built in batches).
MAX_MEMBERS_PER_REQUEST = 1000


@dataclass(frozen=True)
class GroupRequest:
    """A group a client asks for, checked: see :func:`parse_group`."""

    members: list[StartRequest]
    name: str = ""
    callback: Callback | None = None
    on_failure: Callback | None = None
    condition: GroupCondition = GroupCondition.ALL_ENDED
    sealed: bool = True
    key: str | None = field(default=None)


def parse_group(user: User, data: object, *, key: str | None = None) -> GroupRequest:
    """The group ``user`` asks for with ``data``: ``{"members": [{"job": ..., "args":
    ...}, ...]}``, optionally ``name``, ``callback`` and ``on_failure`` (each ``{"job":
    ..., "args": ...}``), ``condition`` (``all_ended`` or ``all_done``) and ``sealed``.

    Each member is a start's input, read by :func:`~django_weft.operations.parse_start`
    (so ``priority``, ``queue`` and ``not_before`` too); 1 to
    :data:`MAX_MEMBERS_PER_REQUEST` of them. Refuses first a user who may not start runs,
    then every bad field by name (``members.3.job``), as a start's input is refused.
    """
    require_start(user)
    if not isinstance(data, Mapping):
        raise ValidationError(
            {NON_FIELD_ERRORS: [f"Expected an object, but got {type(data).__name__}."]}
        )
    errors: dict[str, list[str]] = {
        str(name): [f"Unknown field; a group accepts: {', '.join(sorted(GROUP_FIELDS))}."]
        for name in data
        if name not in GROUP_FIELDS
    }
    members = _members(user, data.get("members"), errors)
    callbacks = {
        name: _callback(user, data.get(name), name, errors) for name in ("callback", "on_failure")
    }
    condition = data.get("condition", GroupCondition.ALL_ENDED)
    if condition not in GroupCondition.values:
        errors["condition"] = [f"One of: {', '.join(GroupCondition.values)}."]
    sealed = data.get("sealed", True)
    if not isinstance(sealed, bool):
        errors["sealed"] = ["Must be true or false."]
    name = data.get("name", "")
    if not isinstance(name, str) or len(name) > GROUP_NAME_LENGTH:
        errors["name"] = [f"Text of at most {GROUP_NAME_LENGTH} characters."]
    if errors:
        raise ValidationError(errors)
    return GroupRequest(
        members=members,
        name=str(name),
        callback=callbacks["callback"],
        on_failure=callbacks["on_failure"],
        condition=GroupCondition(condition),
        sealed=bool(sealed),
        key=key,
    )


def parse_members(user: User, data: object) -> list[StartRequest]:
    """The members ``{"members": [...]}`` asks to add to a group (see :func:`parse_group`)."""
    require_start(user)
    if not isinstance(data, Mapping):
        raise ValidationError(
            {NON_FIELD_ERRORS: [f"Expected an object, but got {type(data).__name__}."]}
        )
    errors: dict[str, list[str]] = {
        str(name): ["Unknown field; adding to a group accepts: members."]
        for name in data
        if name != "members"
    }
    members = _members(user, data.get("members"), errors)
    if errors:
        raise ValidationError(errors)
    return members


def _members(user: User, given: object, errors: dict[str, list[str]]) -> list[StartRequest]:
    if not isinstance(given, list) or not 1 <= len(given) <= MAX_MEMBERS_PER_REQUEST:
        errors["members"] = [
            f"A list of 1 to {MAX_MEMBERS_PER_REQUEST} starts, each a job and its args."
        ]
        return []
    members = []
    for index, item in enumerate(given):
        try:
            members.append(parse_start(user, item))
        except ValidationError as error:
            for name, messages in error.message_dict.items():
                errors[f"members.{index}.{name}"] = messages
        except UnknownJob as error:
            errors[f"members.{index}.job"] = [str(error)]
    return members


def _callback(
    user: User, given: object, name: str, errors: dict[str, list[str]]
) -> Callback | None:
    if given is None:
        return None
    if isinstance(given, Mapping) and set(given) - {"job", "args"}:
        errors[name] = ["A callback accepts: args, job."]
        return None
    try:
        request = parse_start(user, given)
    except ValidationError as error:
        for field_name, messages in error.message_dict.items():
            errors[f"{name}.{field_name}"] = messages
        return None
    except UnknownJob as error:
        errors[f"{name}.job"] = [str(error)]
        return None
    return Callback(request.job, dict(request.args or {}))


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
        # The members' rows first, then the group's (the seal, each member's end): the
        # order a worker's finish takes them in, so that the two never wait for each
        # other in a circle.
        members = list(
            Run.objects.select_for_update().filter(group=group).unfinished().order_by("pk")
        )
        groups.seal(group, now=now, changes=changes)
        asked = sum(finishing.abort(run, now=now, changes=changes) for run in members)
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
    asked = GroupRequest(
        members=list(members),
        name=name,
        callback=callback,
        on_failure=on_failure,
        condition=GroupCondition(condition),
        sealed=sealed,
        key=key,
    )
    return start_requested_group_for(user, asked)[0]


def start_requested_group_for(user: User, asked: GroupRequest) -> tuple[Group, bool]:
    """:func:`start_group_for` of what :func:`parse_group` read; False when its key named
    a group started before (returned as it is)."""
    require_start(user)
    owner = as_owner(user)
    with transaction.atomic(), _members_named():
        group, started = _start(
            [replace(member, owner=owner) for member in asked.members],
            owner=owner,
            name=asked.name,
            callback=asked.callback,
            on_failure=asked.on_failure,
            condition=asked.condition,
            key=asked.key,
            sealed=asked.sealed,
        )
        if started:
            record(
                user,
                AuditAction.GROUP_START,
                group,
                text=f"Started a group of {group.total} runs",
                details={"members": group.total},
            )
    return group, started


@contextmanager
def _members_named() -> Iterator[None]:
    """A member refused when it is written (its args, its job's concurrency limit) named
    as the input names it: ``members.<index>.<field>``."""
    try:
        yield
    except InvalidBatchItem as error:
        raise ValidationError(
            {f"members.{error.index}.{name}": messages for name, messages in error.fields.items()}
            or {f"members.{error.index}": [str(error.error)]}
        ) from error


def add_to_group_for(user: User, group: Group, members: Sequence[StartRequest]) -> list[Run]:
    """:func:`add_to_group` as ``user``: the group's owner or ``change_run``, who may
    start runs; the new members are the group's owner's."""
    require_start(user)
    _require_change(user, group, _("add to group %(group)s"))
    owner = group.owner
    with transaction.atomic(), _members_named():
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

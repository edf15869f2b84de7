"""What every checked call uses: a refusal that names the permission, and the record."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from django.db import models
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.engine import auditing
from django_weft.engine.auditing import entry_point as entry_point
from django_weft.exceptions import (
    Forbidden,
)
from django_weft.models import (
    AuditRecord,
)
from django_weft.timing import clocks

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

#: The schedule fields whose change decides what runs (and so who it runs as).
WHAT_RUNS = ("job", "args")


def require(allowed: bool, verb: str, permission: str, *, or_owner: bool = False) -> None:
    if not allowed:
        raise Forbidden(access.refusal(verb, permission, or_owner=or_owner), permission)


def signed_in(user: User) -> None:
    if not user.is_authenticated:
        raise Forbidden(_("you must be signed in"), "authentication")


def as_owner(user: User) -> AbstractBaseUser:
    return cast("AbstractBaseUser", user)


def record(
    user: User | None,
    action: str,
    obj: models.Model,
    *,
    text: str = "",
    changed: Iterable[str] = (),
    details: Mapping[str, Any] | None = None,
) -> AuditRecord:
    """Put ``user``'s ``action`` (an :class:`~django_weft.models.AuditAction`) on ``obj``
    on record, at the clock's now, as coming through the current :func:`entry_point`.

    Call it inside the action's transaction, once the action has changed something. It
    writes a weft audit record, and an entry in the object's admin history (not for a
    queue, which has none). See :func:`django_weft.engine.auditing.record`.
    """
    return auditing.record(
        user, action, obj, now=clocks.now(), text=text, changed=changed, details=details
    )

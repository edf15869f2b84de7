"""Flow limits edited by operators, checked and on record, in force at every worker's
next claim (see :mod:`django_weft.engine.limits.budget`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from django.db import transaction
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.engine.limits import fairness
from django_weft.engine.limits.saving import save_limit
from django_weft.models import AuditAction, FlowLimit
from django_weft.operations.base import record, require
from django_weft.timing import clocks


def create_limit_for(user: User, fields: Mapping[str, Any]) -> FlowLimit:
    """A new flow limit of ``fields``; needs ``add_flowlimit``."""
    require_limit(user, access.ADD_LIMIT, _("create a flow limit"))
    limit = FlowLimit(updated_at=clocks.now(), updated_by=_who(user))
    with transaction.atomic():
        save_limit(limit, fields)
        record(user, AuditAction.LIMIT_CREATE, limit, text="Created")
    fairness.forget()
    return limit


def edit_limit_for(user: User, limit: FlowLimit, changes: Mapping[str, Any]) -> FlowLimit:
    """Apply ``changes`` to ``limit``; needs ``change_flowlimit``."""
    require_limit(user, access.CHANGE_LIMIT, _("change flow limit %(name)s") % {"name": limit.name})
    with transaction.atomic():
        changed = save_limit(limit, {**changes})
        if changed:
            FlowLimit.objects.filter(pk=limit.pk).update(
                updated_at=clocks.now(), updated_by=_who(user)
            )
            text = f"Changed {', '.join(changed)}"
            record(user, AuditAction.LIMIT_EDIT, limit, text=text, changed=changed)
    fairness.forget()
    limit.refresh_from_db()
    return limit


def delete_limit_for(user: User, limit: FlowLimit) -> None:
    """Delete ``limit``: what it held back may be claimed at once. Needs
    ``delete_flowlimit``. A job's limit in code is written again by the next worker
    that starts with it (delete it from the code to be rid of it)."""
    require_limit(user, access.DELETE_LIMIT, _("delete flow limit %(name)s") % {"name": limit.name})
    with transaction.atomic():
        record(user, AuditAction.LIMIT_DELETE, limit, text="Deleted")
        limit.delete()
    fairness.forget()


def require_limit(user: User, permission: str, verb: str) -> None:
    require(user.has_perm(permission), verb, permission)


def _who(user: User) -> Any:
    return cast(Any, user) if user.is_authenticated else None

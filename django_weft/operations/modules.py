"""Saving, approving and deleting stored modules, checked: code runs only as whoever approved it."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.models import (
    AuditAction,
    Module,
    ModuleRevision,
)
from django_weft.operations.base import as_owner, record, require, signed_in
from django_weft.sandbox import modules
from django_weft.timing import clocks


def save_module_for(user: User, module: Module) -> Module:
    """Save ``module`` (new, or a stored one with its fields changed) as its next revision.

    A new module needs ``add_module`` and is ``user``'s; someone else's needs
    ``manage_module``. A grant the approved revision does not have needs
    ``grant_host_function``. The owner's save is approved at once; anyone else's waits
    for :func:`approve_module_for`, and runs go on executing the approved revision.
    """
    signed_in(user)
    with transaction.atomic():
        if module.pk is None:
            require(user.has_perm(access.ADD_MODULE), _("add stored modules"), access.ADD_MODULE)
            module.owner, approved = as_owner(user), None
        else:
            stored = _locked_module(module, user, _('change stored module "%(module)s"'))
            module.owner_id, approved = stored.owner_id, stored.approved  # not edited
        modules.validate_module(module)
        granted = _require_grants(user, module.grants, approved)
        approve = access.owns(user, module)
        saved = modules.save_revision(module, author=as_owner(user), approve=approve)
        waits = "" if approve else ", waiting for its owner's approval"
        record(user, AuditAction.MODULE_EDIT, saved, text=f"Saved revision {saved.revision}{waits}")
        if granted:
            names = ", ".join(granted)
            record(user, AuditAction.MODULE_GRANT, saved, text=f"Granted {names}")
        return saved


def approve_module_for(user: User, module: Module, revision: int, *, latest: bool = False) -> bool:
    """Make ``revision`` (a number in ``module``'s history) the one its runs execute.

    Needs to own the module or ``manage_module``, and ``grant_host_function`` for a grant
    the approved revision does not have. False when it was approved already.

    With ``latest``, ``revision`` is the newest the approver saw, as the console's
    *approve* button and action send it: when a newer one was saved since, the approval
    is refused naming both (a ``ValidationError``), so that nobody approves a revision
    they never saw. Without it, any revision of the history may be approved (rolling
    back what runs).
    """
    with transaction.atomic():
        stored = _locked_module(module, user, _('approve stored module "%(module)s"'))
        if latest and stored.revision != revision:
            raise ValidationError(
                _(
                    'revision %(newest)d of "%(module)s" was saved after revision %(seen)d, '
                    "the one you approve; nothing was approved: read revision %(newest)d, "
                    "then approve it"
                )
                % {"newest": stored.revision, "module": stored, "seen": revision},
                code="newer_revision",
            )
        chosen = stored.revisions.filter(revision=revision).first()
        if chosen is None:
            raise ValidationError({"revision": [f"{stored} has no revision {revision}."]})
        if errors := modules.grant_errors(chosen.grants):
            raise ValidationError({"grants": errors})
        _require_grants(user, chosen.grants, stored.approved)
        approved = modules.approve_revision(stored, chosen, by=as_owner(user), at=clocks.now())
        if approved:
            record(user, AuditAction.MODULE_APPROVE, stored, text=f"Approved revision {revision}")
    module.approved = stored.approved
    return approved


def delete_module_for(user: User, module: Module) -> None:
    """Delete ``module``: its owner or ``manage_module``, since a module created again
    under its name would run for everyone who calls it.

    The deletion is on record under the module's id and name, with the revision that ran
    and the owner it had: the name is free from now on, and whoever stores a module under
    it next is not who wrote this one.
    """
    with transaction.atomic():
        stored = _locked_module(module, user, _('delete stored module "%(module)s"'))
        approved = stored.approved.revision if stored.approved is not None else None
        details = {
            "name": stored.name,
            "revision": stored.revision,
            "approved": approved,
            "owner": stored.owner.get_username() if stored.owner is not None else None,
        }
        text = f"Deleted at revision {stored.revision}; its name is free"
        record(user, AuditAction.MODULE_DELETE, stored, text=text, details=details)
        stored.delete()


def _locked_module(module: Module, user: User, verb: str) -> Module:
    """``module`` as stored, locked until the caller's transaction ends, once ``user``
    may ``verb`` it (its owner, or ``manage_module``): judged by the row, not by what the
    caller's copy says. ``verb`` words what is refused, with ``%(module)s`` for its name."""
    stored = Module.objects.select_for_update().get(pk=module.pk)
    require(
        access.may_manage_module(user, stored),
        verb % {"module": stored},
        access.MANAGE_MODULE,
        or_owner=True,
    )
    return stored


def _require_grants(user: User, grants: list[str], approved: ModuleRevision | None) -> list[str]:
    """The grants beyond ``approved``'s; refused unless ``user`` may grant, naming each."""
    added = [name for name in grants if approved is None or name not in approved.grants]
    if added:
        names = ", ".join(f'"{name}"' for name in added)
        require(
            access.may_grant_host_functions(user),
            _("grant %(names)s") % {"names": names},
            access.GRANT_HOST_FUNCTION,
        )
    return added

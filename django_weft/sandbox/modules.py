"""The save path of stored modules: check the source and grants, keep the revision, and
approve the revision runs execute.

Every save checks a module the same way (:func:`validate_module`), naming the field
and, for the source, the line: its source must compile under RestrictedPython and each
grant must name a registered host function. A refused module writes nothing.

These are the trusted steps; who may take them (and whether a save is approved at once)
is decided above, in :mod:`django_weft.operations` (``save_module_for``,
``approve_module_for``), which the admin calls.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.core.exceptions import ValidationError
from django.db import transaction

from django_weft.models import Module, ModuleRevision
from django_weft.sandbox.host import host_functions
from django_weft.sandbox.restricted import ModuleSourceError, compile_module

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

#: What a save writes of a stored module: never its approved revision.
EDITED_FIELDS = ("name", "source", "grants", "owner")


def source_errors(source: str, name: str) -> list[str]:
    """RestrictedPython's complaints about ``source``, each naming its line; none if it compiles."""
    try:
        compile_module(source, name)
    except ModuleSourceError as error:
        return error.errors
    return []


def grant_errors(grants: Any) -> list[str]:
    """What is wrong with ``grants``: it must be a list of registered host function names.

    An unknown name is refused naming only that name: the registered ones are the
    project's, not something to show whoever typed a wrong one.
    """
    if not isinstance(grants, list) or not all(isinstance(grant, str) for grant in grants):
        return [
            f'Grants must be a list of host function names, e.g. ["site.stats"], not {grants!r}.'
        ]
    return [
        f'No host function is named "{grant}".' for grant in grants if grant not in host_functions
    ]


def validate_module(module: Module) -> None:
    """Raise ``ValidationError`` naming each field of ``module`` that is wrong."""
    errors: dict[str, list[str]] = {}
    try:
        module.full_clean()
    except ValidationError as error:
        errors.update(error.message_dict)
    if "source" not in errors and (messages := source_errors(module.source, module.name)):
        errors["source"] = messages
    if "grants" not in errors and (messages := grant_errors(module.grants)):
        errors["grants"] = messages
    if errors:
        raise ValidationError(errors)


def save_module(
    module: Module, *, author: AbstractBaseUser | None = None, approve: bool = True
) -> Module:
    """Check ``module``, save it as its next revision and keep that revision in its history.

    With ``approve`` (the default: the caller is the project's own code, or the module's
    owner) runs execute the new revision from now on; without it they go on executing
    the approved one until :func:`approve_revision`.
    """
    validate_module(module)
    return save_revision(module, author=author, approve=approve)


def save_revision(module: Module, *, author: AbstractBaseUser | None, approve: bool) -> Module:
    """Save the checked ``module`` as its next revision (see :func:`save_module`).

    Two saves of one module at once are serialised on its row, so each gets its own
    revision number.
    """
    with transaction.atomic():
        if module.pk is None:
            module.revision, module.approved = 1, None  # a new module has nothing approved
            module.save()
        else:
            module.revision = (
                Module.objects.select_for_update()
                .values_list("revision", flat=True)
                .get(pk=module.pk)
                + 1
            )
            # Which revision is approved is written by approve_revision only.
            module.save(update_fields=[*EDITED_FIELDS, "revision", "updated_at"])
        revision = ModuleRevision.objects.create(
            module=module,
            revision=module.revision,
            source=module.source,
            grants=module.grants,
            author=cast(Any, author),  # AUTH_USER_MODEL, whatever class the project swapped in
        )
        if approve:
            approve_revision(module, revision, by=author, at=revision.created_at)
    return module


def approve_revision(
    module: Module, revision: ModuleRevision, *, by: AbstractBaseUser | None, at: datetime
) -> bool:
    """Make ``revision`` the one runs of ``module`` execute, approved ``by`` ``at``.

    Returns False (and writes nothing) when it already was.
    """
    with transaction.atomic():
        approved = (
            Module.objects.select_for_update().values_list("approved", flat=True).get(pk=module.pk)
        )
        if approved == revision.pk:
            module.approved = revision
            return False
        revision.approved_by, revision.approved_at = cast(Any, by), at
        revision.save(update_fields=["approved_by", "approved_at"])
        Module.objects.filter(pk=module.pk).update(approved=revision)
        module.approved = revision
    return True

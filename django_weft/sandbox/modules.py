"""The save path of stored modules: check the source and grants, then keep the revision.

The admin's form and :func:`save_module` check a module the same way, naming the
field and, for the source, the line: its source must compile under RestrictedPython
and each grant must name a registered host function. A refused module writes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.core.exceptions import ValidationError
from django.db import transaction

from django_weft.models import Module, ModuleRevision
from django_weft.sandbox.host import host_functions
from django_weft.sandbox.restricted import ModuleSourceError, compile_module

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


def source_errors(source: str, name: str) -> list[str]:
    """RestrictedPython's complaints about ``source``, each naming its line; none if it compiles."""
    try:
        compile_module(source, name)
    except ModuleSourceError as error:
        return error.errors
    return []


def grant_errors(grants: Any) -> list[str]:
    """What is wrong with ``grants``: it must be a list of registered host function names."""
    if not isinstance(grants, list) or not all(isinstance(grant, str) for grant in grants):
        return [
            f'Grants must be a list of host function names, e.g. ["site.stats"], not {grants!r}.'
        ]
    known = ", ".join(host_functions) or "none"
    return [
        f'No host function is named "{grant}"; registered: {known}.'
        for grant in grants
        if grant not in host_functions
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


def save_module(module: Module, *, author: AbstractBaseUser | None = None) -> Module:
    """Check ``module``, save it as its next revision and keep that revision in its history.

    Two saves of one module at once are serialised on its row, so each gets its own
    revision number.
    """
    validate_module(module)
    with transaction.atomic():
        if module.pk is None:
            module.revision = 1
        else:
            module.revision = (
                Module.objects.select_for_update()
                .values_list("revision", flat=True)
                .get(pk=module.pk)
                + 1
            )
        module.save()
        ModuleRevision.objects.create(
            module=module,
            revision=module.revision,
            source=module.source,
            grants=module.grants,
            author=cast(Any, author),  # AUTH_USER_MODEL, whatever class the project swapped in
        )
    return module

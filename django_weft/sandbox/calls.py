"""Calling a stored module: look it up by name, run its approved revision in the sandbox.

Whatever calls a module (a ``weft.module`` run, :func:`call_module`) runs the revision
its owner or a module manager approved, with that revision's grants, never the latest
edit as such (see :mod:`django_weft.sandbox.modules`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django_weft import access
from django_weft.models import Module, ModuleRevision
from django_weft.sandbox.errors import ModuleNotAllowed, ModuleNotApproved, UnknownModule
from django_weft.sandbox.process import Answer, Check, ModuleCall
from django_weft.sandbox.runner import OnReady, run_call

#: The callable a call without a method runs: a module's default export.
DEFAULT_METHOD = "default"


def find_module(name: str) -> Module:
    try:
        return Module.objects.select_related("approved").get(name=name)
    except Module.DoesNotExist:
        raise UnknownModule(f'no stored module is named "{name}"') from None


def approved_revision(module: Module) -> ModuleRevision:
    """The revision of ``module`` that runs; ``ModuleNotApproved`` when there is none."""
    if module.approved is None:
        raise ModuleNotApproved(
            f'the stored module "{module.name}" has no approved revision: revision '
            f"{module.revision} waits for its owner's or a module manager's approval"
        )
    return module.approved


def module_call(
    module: Module,
    method: str = DEFAULT_METHOD,
    args: list[Any] | dict[str, Any] | None = None,
    *,
    context: Mapping[str, Any] | None = None,
) -> ModuleCall:
    """The call of ``method`` of the module's approved revision, with that revision's grants."""
    approved = approved_revision(module)
    return ModuleCall(
        module=module.name,
        source=approved.source,
        method=method,
        args=[] if args is None else args,
        grants=tuple(approved.grants),
        context={"module": module.name, "revision": approved.revision, **(context or {})},
    )


def require_use(owner: access.User | None, module: Module) -> None:
    """Refuse (``ModuleNotAllowed``) a call of ``module`` by a run of ``owner``.

    Asked again when a run calls the module, not only when it was started: the owner
    may have lost the permission, or the name may hold another module by now.
    """
    if not access.may_use_module(owner, module):
        raise ModuleNotAllowed(
            f"{access.module_use_refusal(module.name)}; the run's owner is neither"
        )


def call_module(
    name: str,
    method: str = DEFAULT_METHOD,
    args: list[Any] | dict[str, Any] | None = None,
    *,
    context: Mapping[str, Any] | None = None,
    check: Check | None = None,
    on_ready: OnReady | None = None,
) -> Answer:
    """Run ``method`` of the stored module ``name`` with ``args`` (a list: positional,
    an object: keywords) in the sandbox; raise a :class:`~.errors.SandboxError` if it fails.

    A trusted call: the caller has decided who may run the module.
    """
    call = module_call(find_module(name), method, args, context=context)
    return run_call(call, check=check, on_ready=on_ready)

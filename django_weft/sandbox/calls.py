"""Calling a stored module from Python: look it up by name, run it in the sandbox."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django_weft.models import Module
from django_weft.sandbox.errors import UnknownModule
from django_weft.sandbox.process import Answer, Check, ModuleCall
from django_weft.sandbox.runner import OnReady, load_runner

#: The callable a call without a method runs: a module's default export.
DEFAULT_METHOD = "default"


def find_module(name: str) -> Module:
    try:
        return Module.objects.get(name=name)
    except Module.DoesNotExist:
        raise UnknownModule(f'no stored module is named "{name}"') from None


def module_call(
    module: Module,
    method: str = DEFAULT_METHOD,
    args: list[Any] | dict[str, Any] | None = None,
    *,
    context: Mapping[str, Any] | None = None,
) -> ModuleCall:
    """The call of ``method`` of the module as it is stored now, with its grants."""
    return ModuleCall(
        module=module.name,
        source=module.source,
        method=method,
        args=[] if args is None else args,
        grants=tuple(module.grants),
        context={"module": module.name, "revision": module.revision, **(context or {})},
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
    """
    call = module_call(find_module(name), method, args, context=context)
    return load_runner().run(call, check=check, on_ready=on_ready)

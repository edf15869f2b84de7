"""The built-in job ``weft.module``: a stored module's callable, run in the sandbox.

Its args are ``module`` (the stored module's name), ``method`` (the callable; its
default export ``default`` when left out) and ``args`` (JSON: a list is passed
positionally, an object by keyword). The module's JSON answer is the run's result.

The run calls the module's approved revision, and only if the run's owner may use the
module (its owner, or ``use_module``): checked when the start is validated (the owner
reaches the args serializer) and again when the run calls it. The run's state records
the revision that ran (before it runs), the layers that were active and what the
module printed. While the module runs the job calls ``ctx.check()``, so an abort kills
the child at once.
"""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from django_weft import access
from django_weft.jobs.context import RunContext
from django_weft.jobs.registry import StateSpec, job
from django_weft.models import Module
from django_weft.sandbox.calls import DEFAULT_METHOD, find_module, module_call, require_use
from django_weft.sandbox.errors import SandboxError
from django_weft.sandbox.runner import Layers, run_call

IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


#: The default args of a stored module's call: none.
NO_ARGS: Any = list


class ModuleArgs(serializers.Serializer[Any]):
    module = serializers.CharField(max_length=200)
    method = serializers.RegexField(
        IDENTIFIER,
        required=False,
        default=DEFAULT_METHOD,
        error_messages={"invalid": 'A method is a name that starts with a letter, e.g. "run".'},
    )
    # A list is JSON too, though djangorestframework-stubs before 3.18.2 allow only
    # mappings as a JSONField's default: typed Any, it suits the stubs before and after.
    args = serializers.JSONField(required=False, default=NO_ARGS)

    def validate_module(self, value: str) -> str:
        """A stored module with an approved revision that the start's owner may use."""
        module = Module.objects.filter(name=value).first()
        if module is None:
            raise serializers.ValidationError(f'No stored module is named "{value}".')
        if not access.may_use_module(self.context.get("owner"), module):
            refusal = access.module_use_refusal(value)
            raise serializers.ValidationError(f"{refusal[:1].upper()}{refusal[1:]}.")
        if module.approved_id is None:
            raise serializers.ValidationError(
                f'The stored module "{value}" has no approved revision yet.'
            )
        return value

    def validate_args(self, value: Any) -> Any:
        if not isinstance(value, list | dict):
            raise serializers.ValidationError(
                "Give the args as a list (positional) or an object (by keyword)."
            )
        return value


@job("weft.module", args=ModuleArgs, state=StateSpec("weft.module"))
def run_module(ctx: RunContext, module: str, method: str = DEFAULT_METHOD, args: Any = None) -> Any:
    """Run ``method`` of the stored ``module`` in the sandbox; its answer is the result."""
    stored = find_module(module)
    require_use(ctx.run.owner, stored)
    state = ctx.state
    assert state is not None  # the job declares a state document

    def record(**values: Any) -> None:
        state.change(lambda data: data.update(values))

    def ready(layers: Layers) -> None:
        record(layers=layers)

    context = {
        "run": str(ctx.run_id),
        "due": ctx.due.isoformat() if ctx.due is not None else None,
        "attempt": ctx.attempt,
    }
    call = module_call(stored, method, args, context=context)
    record(module=stored.name, revision=call.context["revision"])
    try:
        answer = run_call(call, check=ctx.check, on_ready=ready)
    except SandboxError as error:
        if error.output:
            record(output=error.output)
        raise
    if answer.output:
        record(output=answer.output)
    return answer.value

"""The built-in job ``weft.module``: a stored module's callable, run in the sandbox.

Its args are ``module`` (the stored module's name), ``method`` (the callable; its
default export ``default`` when left out) and ``args`` (JSON: a list is passed
positionally, an object by keyword). The module's JSON answer is the run's result.
The run's state records the module's revision, the layers that were active and what
the module printed. While the module runs the job calls ``ctx.check()``, so an abort
kills the child at once.
"""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from django_weft.jobs.context import RunContext
from django_weft.jobs.registry import StateSpec, job
from django_weft.models import Module
from django_weft.sandbox.calls import DEFAULT_METHOD, find_module, module_call
from django_weft.sandbox.errors import SandboxError
from django_weft.sandbox.runner import Layers, load_runner

IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class ModuleArgs(serializers.Serializer[Any]):
    module = serializers.CharField(max_length=200)
    method = serializers.RegexField(
        IDENTIFIER,
        required=False,
        default=DEFAULT_METHOD,
        error_messages={"invalid": 'A method is a name that starts with a letter, e.g. "run".'},
    )
    # The stubs allow only mappings as a JSONField's default; a list is JSON too.
    args = serializers.JSONField(required=False, default=list)  # type: ignore[arg-type]

    def validate_module(self, value: str) -> str:
        if not Module.objects.filter(name=value).exists():
            raise serializers.ValidationError(f'No stored module is named "{value}".')
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
    state = ctx.state
    assert state is not None  # the job declares a state document

    def record(**values: Any) -> None:
        state.change(lambda data: data.update(values))

    def ready(layers: Layers) -> None:
        record(module=stored.name, revision=stored.revision, layers=layers)

    context = {
        "run": str(ctx.run_id),
        "due": ctx.due.isoformat() if ctx.due is not None else None,
        "attempt": ctx.attempt,
    }
    call = module_call(stored, method, args, context=context)
    try:
        answer = load_runner().run(call, check=ctx.check, on_ready=ready)
    except SandboxError as error:
        if error.output:
            record(output=error.output)
        raise
    if answer.output:
        record(output=answer.output)
    return answer.value

"""Host functions: what a stored module may ask the host to do, if it is granted.

A project registers a function with :func:`host_function`; a module whose ``grants``
list that name may call it as ``host("name", *args)``. The call crosses the pipe as
JSON: the host (never the child) checks the name against the module's grants, runs
the function in the worker with the JSON args, and sends back its JSON answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

HostFunction = Callable[..., Any]

NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")


class HostFunctionRegistry:
    """The host functions of this process, by name."""

    def __init__(self) -> None:
        self._functions: dict[str, HostFunction] = {}

    def register(self, name: str, function: HostFunction) -> HostFunction:
        if not NAME.match(name):
            raise ValueError(
                f'host function name "{name}" must be dotted lower-case words, e.g. "site.stats"'
            )
        existing = self._functions.get(name)
        if existing is not None and existing is not function:
            raise ValueError(f'a host function named "{name}" is already registered ({existing!r})')
        self._functions[name] = function
        return function

    def unregister(self, name: str) -> None:
        self._functions.pop(name, None)

    def get(self, name: str) -> HostFunction | None:
        return self._functions.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._functions))


host_functions = HostFunctionRegistry()


def host_function(name: str) -> Callable[[HostFunction], HostFunction]:
    """Register the decorated function as the host function ``name``.

    It is called with the module's JSON args as positional arguments and must return
    JSON; what it raises reaches the module as a ``HostError`` with its message.
    """

    def decorate(function: HostFunction) -> HostFunction:
        return host_functions.register(name, function)

    return decorate

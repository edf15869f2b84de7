"""What ``import json`` gives a stored module: a view of the allow-listed names, no more.

A real module object leads anywhere (``statistics.sys.modules["os"]``, a function's
``__globals__`` through a helper), so a module is never handed over: its view holds
the names of its allow-list (:mod:`.allowlist`), a name holding a module is the view of
that module when it is allowed itself, and every other name of the real module is
refused, saying why. A view keeps no reference to the real module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

from django_weft.sandbox.allowlist import allowed_names, refusal

#: How a view refuses: the refusal is recorded (and sent to the host) before it is raised.
Refuse = Callable[[str], BaseException]


def is_allowed(name: str, allowed: Iterable[str]) -> bool:
    """Whether ``name`` is an allowed module or a submodule of one (``collections.abc``)."""
    return any(name == top or name.startswith(top + ".") for top in allowed)


class ModuleView:
    """The allow-listed names of one module, read-only; nothing else of the module.

    Its slots hold plain data and the refusing closure; none is public, and the guards
    refuse every name that starts with "_".
    """

    __slots__ = ("_module_name", "_names", "_refuse", "_withheld")
    _module_name: str
    _names: dict[str, Any]
    _refuse: Refuse
    _withheld: dict[str, str]

    def __init__(
        self, refuse: Refuse, module_name: str, names: dict[str, Any], withheld: dict[str, str]
    ) -> None:
        object.__setattr__(self, "_refuse", refuse)
        object.__setattr__(self, "_module_name", module_name)
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_withheld", withheld)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._names[name]
        except KeyError:
            pass
        if name in self._withheld:
            raise self._refuse(f"{self._module_name}.{name} is not allowed: {self._withheld[name]}")
        raise AttributeError(f'module "{self._module_name}" has no name "{name}"')

    def __setattr__(self, name: str, value: Any) -> None:
        raise self._refuse(f'module "{self._module_name}" is read-only')

    def __repr__(self) -> str:
        return f"<module {self._module_name}>"


class Views:
    """The views of one call's allowed modules, each made once, on first import."""

    def __init__(
        self,
        refuse: Refuse,
        allowed_imports: Sequence[str],
        configured: Mapping[str, Sequence[str]],
    ) -> None:
        self._refuse = refuse
        self._allowed_imports = tuple(allowed_imports)
        self._configured = configured
        self._views: dict[str, ModuleView] = {}

    def names_of(self, module: str) -> frozenset[str] | None:
        """The allow-list of ``module``, or None when it has none."""
        return allowed_names(module, self._configured)

    def may_view(self, module: str) -> bool:
        """Whether ``module`` is allowed, allow-listed and imported: a view can be made."""
        return (
            is_allowed(module, self._allowed_imports)
            and self.names_of(module) is not None
            and module in sys.modules
        )

    def view(self, name: str) -> ModuleView:
        """The view of the allowed, imported module ``name`` (:meth:`may_view`)."""
        if name not in self._views:
            names = self.names_of(name)
            assert names is not None
            self._views[name] = self._make(name, sys.modules[name], names)
        return self._views[name]

    def _make(self, name: str, module: ModuleType, names: frozenset[str]) -> ModuleView:
        exposed: dict[str, Any] = {}
        withheld: dict[str, str] = {}
        for attribute, value in vars(module).items():
            if attribute.startswith("_"):
                continue
            reason = refusal(name, attribute)
            if reason is None and isinstance(value, ModuleType):
                if attribute in names and self.may_view(value.__name__):
                    exposed[attribute] = self.view(value.__name__)
                    continue
                reason = f'it is the module "{value.__name__}"'
            if reason is None and attribute in names:
                exposed[attribute] = value
                continue
            withheld[attribute] = reason or (
                f'it is not in the attribute allow-list of "{name}" (WEFT_SANDBOX_IMPORT_NAMES)'
            )
        return ModuleView(self._refuse, name, exposed, withheld)

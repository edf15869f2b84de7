"""RestrictedPython's compile and the guards a stored module runs under.

The host compiles a module's source with :func:`compile_module` when it is saved (the
admin and :func:`django_weft.sandbox.modules.store_module`), and the child compiles it
again before running it: what the child runs is always what RestrictedPython accepted.

The guards see every attribute read, attribute write, item read, iteration and import
of the module's code. A refusal raises, and it is also recorded in :class:`Refusals`:
a module that catches the refusal and carries on still fails, so probing the room
from inside a ``try`` gains nothing.
"""

from __future__ import annotations

import builtins
import operator
import string
import sys
from collections.abc import Callable, Iterable
from types import CodeType, FrameType, ModuleType, TracebackType
from typing import Any

from RestrictedPython.compile import compile_restricted_exec
from RestrictedPython.Guards import (
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safe_builtins,
)
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

#: The ``__name__`` of a module's globals, and so the ``__module__`` of its classes.
MODULE_NAME = "weft_sandboxed_module"

#: Builtins beyond RestrictedPython's ``safe_builtins`` that reach nothing outside.
EXTRA_BUILTINS = (
    "all",
    "any",
    "bin",
    "classmethod",
    "dict",
    "enumerate",
    "filter",
    "format",
    "frozenset",
    "iter",
    "list",
    "map",
    "max",
    "min",
    "next",
    "object",
    "property",
    "reversed",
    "set",
    "sorted",
    "staticmethod",
    "sum",
    "super",
    "tuple",
    "zip",
    "ArithmeticError",
    "RecursionError",
    "StopAsyncIteration",
)

#: Builtins that would open the room; calling one fails naming it.
WITHHELD_BUILTINS = (
    "breakpoint",
    "compile",
    "delattr",
    "dir",
    "eval",
    "exec",
    "exit",
    "globals",
    "help",
    "input",
    "locals",
    "memoryview",
    "open",
    "quit",
    "type",
    "vars",
)

#: Values a module's code must never hold: they lead to frames, globals and builtins.
INTERNAL_TYPES = (CodeType, FrameType, TracebackType)

#: Names of allowed modules that are withheld anyway, with the reason.
WITHHELD_MODULE_NAMES = {"string": {"Formatter": "it reads attributes unguarded"}}

#: Modules the C code of an allowed module imports on first use, through the
#: ``__import__`` of the module's builtins. They are imported before the module runs
#: and handed over as they are: a module's own code cannot name them (RestrictedPython
#: refuses names that start with "_"), only the allowed module's C code asks for them.
LAZY_IMPORTS = {"datetime": ("_strptime",)}

#: Attribute names of ``str`` whose format strings read attributes unguarded.
FORMAT_METHODS = frozenset({"format", "format_map"})

_MISSING = object()


class ModuleSourceError(Exception):
    """The source does not compile under RestrictedPython; ``errors`` name each line."""

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


class Refused(BaseException):
    """A guard refused something. A ``BaseException``, so ``except Exception`` lets it by."""

    kind = "forbidden_access"


class ImportRefused(Refused, ImportError):
    kind = "forbidden_import"


def compile_module(source: str, name: str) -> CodeType:
    """The module's code object, or :class:`ModuleSourceError` with RestrictedPython's errors.

    Its errors read ``Line 3: SyntaxError: ...`` or ``Line 2: "__class__" is an invalid
    attribute name because it starts with "_".``
    """
    result = compile_restricted_exec(source, filename=module_filename(name))
    if result.errors or result.code is None:
        raise ModuleSourceError(result.errors or ["the source did not compile"])
    code: CodeType = result.code
    return code


def module_filename(name: str) -> str:
    return f"<module {name}>"


class Refusals:
    """The first refusal of a call: the call fails with it even if the module caught it."""

    def __init__(self) -> None:
        self.first: Refused | None = None

    def refuse(self, error: Refused) -> Refused:
        if self.first is None:
            self.first = error
        return error


def is_allowed(name: str, allowed: Iterable[str]) -> bool:
    """Whether ``name`` is an allowed module or a submodule of one (``collections.abc``)."""
    return any(name == top or name.startswith(top + ".") for top in allowed)


class ModuleView:
    """What ``import json`` gives a module: the public names of the real module, read-only.

    A real module object would lead further (``statistics.sys.modules["os"]``), so
    names that hold modules outside the allow-list are withheld, and allowed ones are
    views themselves.
    """

    __slots__ = ("_module_name", "_names", "_room", "_withheld")

    def __init__(
        self, room: Room, module_name: str, names: dict[str, Any], withheld: dict[str, str]
    ) -> None:
        object.__setattr__(self, "_room", room)
        object.__setattr__(self, "_module_name", module_name)
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_withheld", withheld)

    def __getattr__(self, name: str) -> Any:
        if name in self._withheld:
            raise self._room.refuse(
                f"{self._module_name}.{name} is not allowed: {self._withheld[name]}"
            )
        try:
            return self._names[name]
        except KeyError:
            raise AttributeError(f'module "{self._module_name}" has no name "{name}"') from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise self._room.refuse(f'module "{self._module_name}" is read-only')

    def __repr__(self) -> str:
        return f"<module {self._module_name}>"


class Room:
    """The guards and builtins of one call, sharing one record of refusals."""

    def __init__(self, *, allowed_imports: Iterable[str], output_limit: int) -> None:
        self.allowed_imports = tuple(allowed_imports)
        self.output_limit = output_limit
        self.refusals = Refusals()
        self.output: list[str] = []
        self.output_size = 0
        self._views: dict[str, ModuleView] = {}
        self.lazy_imports = frozenset(
            lazy for name in self.allowed_imports for lazy in LAZY_IMPORTS.get(name, ())
        )

    def refuse(self, message: str, kind: type[Refused] = Refused) -> Refused:
        return self.refusals.refuse(kind(message))

    # -- imports --------------------------------------------------------------------------

    def guarded_import(
        self,
        name: str,
        globals: Any = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> ModuleView:
        if level != 0:
            raise self.refuse("relative imports are not allowed", ImportRefused)
        if name in self.lazy_imports and name in sys.modules:
            return sys.modules[name]  # type: ignore[return-value]
        if not is_allowed(name, self.allowed_imports):
            raise self.refuse(
                f'import of "{name}" is not allowed; allowed: {", ".join(self.allowed_imports)}',
                ImportRefused,
            )
        __import__(name)
        # ``import a.b`` binds ``a``; ``from a.b import c`` reads c from ``a.b``.
        return self.view(name if fromlist else name.partition(".")[0])

    def view(self, name: str) -> ModuleView:
        if name not in self._views:
            module = sys.modules[name]
            withheld = dict(WITHHELD_MODULE_NAMES.get(name, {}))
            names: dict[str, Any] = {}
            for attribute, value in vars(module).items():
                if attribute.startswith("_") or attribute in withheld:
                    continue
                if isinstance(value, ModuleType):
                    if not is_allowed(value.__name__, self.allowed_imports):
                        withheld[attribute] = f'it is the module "{value.__name__}"'
                        continue
                    value = self.view(value.__name__)
                names[attribute] = value
            self._views[name] = ModuleView(self, name, names, withheld)
        return self._views[name]

    # -- attributes -----------------------------------------------------------------------

    def guarded_getattr(self, obj: Any, name: Any, default: Any = _MISSING) -> Any:
        if not isinstance(name, str):
            raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
        self.check_attribute(obj, name)
        value = getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        return self.check_value(value, f'attribute "{name}"')

    def check_attribute(self, obj: Any, name: str) -> None:
        if name.startswith("_"):
            raise self.refuse(f'attribute "{name}" is not allowed: it starts with "_"')
        if name in INSPECT_ATTRIBUTES:
            raise self.refuse(f'attribute "{name}" is not allowed: it leads to frames or code')
        if name in FORMAT_METHODS and (
            isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))
        ):
            raise self.refuse(
                f"str.{name} is not allowed: its format strings read attributes unguarded; "
                "use an f-string or %"
            )
        if isinstance(obj, string.Formatter) or (
            isinstance(obj, type) and issubclass(obj, string.Formatter)
        ):
            raise self.refuse("string.Formatter is not allowed: it reads attributes unguarded")
        if isinstance(obj, INTERNAL_TYPES):
            raise self.refuse(f"attributes of {type(obj).__name__} objects are not allowed")

    def check_value(self, value: Any, what: str) -> Any:
        if isinstance(value, INTERNAL_TYPES):
            raise self.refuse(f"{what} is a {type(value).__name__} object, which is not allowed")
        if isinstance(value, ModuleType):
            if not is_allowed(value.__name__, self.allowed_imports):
                raise self.refuse(f'{what} is the module "{value.__name__}", which is not allowed')
            return self.view(value.__name__)
        return value

    def guarded_getitem(self, obj: Any, key: Any) -> Any:
        return self.check_value(obj[key], "the item")

    def guarded_iter(self, obj: Any) -> Any:
        return iter(obj)

    def guarded_hasattr(self, obj: Any, name: Any) -> bool:
        try:
            self.guarded_getattr(obj, name)
        except AttributeError:
            return False
        return True

    # -- writes ---------------------------------------------------------------------------

    def write_guard(self, obj: Any) -> Any:
        """What ``obj.x = ...`` and ``obj[k] = ...`` write to: containers and the module's own
        objects as they are; anything else (a module view, a class from the standard
        library, a builtin) refuses the write."""
        if type(obj) in (dict, list, set) or _defined_by_module(obj):
            return obj
        return _ReadOnly(self, obj)

    def guarded_setattr(self, obj: Any, name: Any, value: Any) -> None:
        if not isinstance(name, str):
            raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
        if name.startswith("_"):
            raise self.refuse(f'attribute "{name}" is not allowed: it starts with "_"')
        setattr(self.write_guard(obj), name, value)

    # -- printing -------------------------------------------------------------------------

    def print_collector(self, _getattr_: Any = None) -> _Printer:
        return _Printer(self)

    def write_output(self, text: str) -> None:
        self.output_size += len(text.encode())
        if self.output_size > self.output_limit:
            raise self.refusals.refuse(
                OutputLimit(
                    f"the module printed more than {self.output_limit} bytes "
                    "(WEFT_SANDBOX_MAX_OUTPUT_BYTES)"
                )
            )
        self.output.append(text)

    # -- the globals ----------------------------------------------------------------------

    def builtins(self) -> dict[str, Any]:
        names = dict(safe_builtins)
        for name in EXTRA_BUILTINS:
            names[name] = getattr(builtins, name)
        for name in WITHHELD_BUILTINS:
            names[name] = self._withheld(name)
        names.update(
            __import__=self.guarded_import,
            getattr=self.guarded_getattr,
            hasattr=self.guarded_hasattr,
            setattr=self.guarded_setattr,
        )
        return names

    def _withheld(self, name: str) -> Callable[..., Any]:
        def withheld(*args: Any, **kwargs: Any) -> Any:
            raise self.refuse(f"{name}() is not available in the sandbox")

        withheld.__name__ = withheld.__qualname__ = name
        return withheld

    def module_globals(self, extra: dict[str, Any]) -> dict[str, Any]:
        """The globals a module's code runs in: the guards under RestrictedPython's names."""
        return {
            "__builtins__": self.builtins(),
            "__name__": MODULE_NAME,
            "__metaclass__": type,
            "_getattr_": self.guarded_getattr,
            "_getitem_": self.guarded_getitem,
            "_getiter_": self.guarded_iter,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_write_": self.write_guard,
            "_inplacevar_": inplace,
            "_apply_": _apply,
            "_print_": self.print_collector,
            **extra,
        }


class OutputLimit(Refused):
    kind = "limit"


def _defined_by_module(obj: Any) -> bool:
    """Instances (and classes) the module's own code defined take attribute writes."""
    cls = obj if isinstance(obj, type) else type(obj)
    return getattr(cls, "__module__", None) == MODULE_NAME


class _ReadOnly:
    """Stands in for an object the module may read but not write."""

    __slots__ = ("_obj", "_room")
    _obj: Any
    _room: Room

    def __init__(self, room: Room, obj: Any) -> None:
        object.__setattr__(self, "_room", room)
        object.__setattr__(self, "_obj", obj)

    def _refuse(self, *args: Any) -> None:
        raise self._room.refuse(f"{type(self._obj).__name__} objects are read-only here")

    __setattr__ = __delattr__ = __setitem__ = __delitem__ = _refuse


class _Printer:
    """RestrictedPython's print collector, writing into the room's bounded output."""

    def __init__(self, room: Room) -> None:
        self._room = room

    def write(self, text: str) -> None:
        self._room.write_output(text)

    def __call__(self) -> str:
        return "".join(self._room.output)

    def _call_print(self, *objects: Any, **kwargs: Any) -> None:
        kwargs["file"] = self
        print(*objects, **kwargs)


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "^=": operator.ixor,
    "|=": operator.ior,
    "@=": operator.imatmul,
}


def inplace(op: str, target: Any, value: Any) -> Any:
    return _INPLACE[op](target, value)


def _apply(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)

"""RestrictedPython's compile and the guards a stored module runs under.

The host compiles a module's source with :func:`compile_module` when it is saved (the
admin and :func:`django_weft.sandbox.modules.store_module`), and the child compiles it
again before running it: what the child runs is always what RestrictedPython accepted.

The guards see every attribute read, attribute write, item read, iteration and import
of the module's code. A refusal raises, and at that moment it is recorded and reported
(the child sends it to the host, which fails the call with it whatever comes after): a
module that catches the refusal and carries on still fails, so probing the room from
inside a ``try`` gains nothing, and no object the module reaches can take it back.

The guards a module's globals hold are closures, never bound methods of an object with
state: there is no ``__self__`` to walk to, and a closure's cells are refused like
frames. The record of a call lives in :class:`Room`, which only the child's trusted
code holds.
"""

from __future__ import annotations

import builtins
import operator
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import CellType, CodeType, FrameType, ModuleType, TracebackType
from typing import Any

from RestrictedPython.compile import compile_restricted_exec
from RestrictedPython.Guards import (
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safe_builtins,
)
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from django_weft.sandbox.allowlist import no_allow_list
from django_weft.sandbox.views import Views, is_allowed

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

#: Values a module's code must never hold: they lead to frames, globals and builtins (a
#: cell is what a closure, a guard's included, keeps its variables in).
INTERNAL_TYPES = (CodeType, FrameType, TracebackType, CellType)

#: Modules the C code of an allowed module imports on first use, through the
#: ``__import__`` of the module's builtins. They are imported before the module runs
#: and handed over as they are: a module's own code cannot name them (RestrictedPython
#: refuses names that start with "_"), only the allowed module's C code asks for them.
LAZY_IMPORTS = {"datetime": ("_strptime",)}

#: Modules the Python code of an allowed module imports on first use, with the real
#: ``__import__`` (``Counter.most_common`` imports ``heapq``). They are imported before
#: the module runs, as the audit hook refuses every import after that; the module itself
#: gets them only if they are allowed.
PRELOADS = {"collections": ("heapq",)}

#: Attribute names of ``str`` whose format strings read attributes unguarded.
FORMAT_METHODS = frozenset({"format", "format_map"})

#: Longest refusal message kept: a refusal quotes names the module chose.
MESSAGE_LIMIT = 2000

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


class OutputLimit(Refused):
    kind = "limit"


#: Makes a refusal of a kind, records and reports it, and returns it to be raised.
Refuse = Callable[..., Refused]


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


def recorder(record: list[Refused], report: Callable[[Refused], None]) -> Refuse:
    """A closure that records each refusal in ``record`` and reports the first at once.

    ``report`` is the child's line to the host: once the first refusal is reported, the
    call fails with it even if the module catches it and the record here is lost.
    """

    def refuse(message: str, kind: type[Refused] = Refused) -> Refused:
        if len(message) > MESSAGE_LIMIT:
            message = message[:MESSAGE_LIMIT] + "..."
        error = kind(message)
        record.append(error)
        if len(record) == 1:
            report(error)
        return error

    return refuse


class Room:
    """The trusted side of one call: its record of refusals and output, and the globals
    its module runs in. The module never holds the room, only the guards' closures."""

    def __init__(
        self,
        *,
        allowed_imports: Sequence[str],
        import_names: Mapping[str, Sequence[str]],
        output_limit: int,
        report: Callable[[Refused], None],
    ) -> None:
        self.refusals: list[Refused] = []
        self.output: list[str] = []
        self.refuse = recorder(self.refusals, report)
        self.allowed_imports = tuple(allowed_imports)
        self.views = Views(self.refuse, self.allowed_imports, import_names)
        self.output_limit = output_limit

    @property
    def first_refusal(self) -> Refused | None:
        return self.refusals[0] if self.refusals else None

    def module_globals(self, extra: dict[str, Any]) -> dict[str, Any]:
        """The globals a module's code runs in: the guards under RestrictedPython's names."""
        check_value = value_guard(self.refuse, self.views)
        guarded_getattr = attribute_guard(self.refuse, check_value)
        names = dict(safe_builtins)
        for name in EXTRA_BUILTINS:
            names[name] = getattr(builtins, name)
        for name in WITHHELD_BUILTINS:
            names[name] = withheld_builtin(self.refuse, name)
        names.update(
            __import__=import_guard(self.refuse, self.views, self.allowed_imports),
            _getattr_=guarded_getattr,  # not RestrictedPython's own, which safe_builtins has
            getattr=guarded_getattr,
            hasattr=hasattr_guard(guarded_getattr),
            setattr=setattr_guard(self.refuse),
        )
        return {
            "__builtins__": names,
            "__name__": MODULE_NAME,
            # RestrictedPython makes every class statement name its metaclass so; the
            # module's code cannot name it ("_"), nor write ``metaclass=``.
            "__metaclass__": type,
            "_getattr_": guarded_getattr,
            "_getitem_": item_guard(check_value),
            "_getiter_": iteration_guard(check_value),
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_write_": write_guard(self.refuse),
            "_inplacevar_": inplace,
            "_apply_": _apply,
            "_print_": print_collector(self.refuse, self.output, self.output_limit),
            **extra,
        }


# -- imports ------------------------------------------------------------------------------


def import_guard(refuse: Refuse, views: Views, allowed: tuple[str, ...]) -> Callable[..., Any]:
    """``__import__``: an allowed module with an allow-list, as its view."""
    lazy_imports = frozenset(lazy for name in allowed for lazy in LAZY_IMPORTS.get(name, ()))

    def guarded_import(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if level != 0:
            raise refuse("relative imports are not allowed", ImportRefused)
        if name in lazy_imports and name in sys.modules:
            return sys.modules[name]
        if not is_allowed(name, allowed):
            raise refuse(
                f'import of "{name}" is not allowed; allowed: {", ".join(allowed)}', ImportRefused
            )
        # ``import a.b`` binds ``a``; ``from a.b import c`` reads c from ``a.b``.
        bound = name if fromlist else name.partition(".")[0]
        for module in dict.fromkeys((name, bound)):
            if views.names_of(module) is None:
                raise refuse(
                    f'import of "{module}" is not allowed: {no_allow_list(module)}', ImportRefused
                )
        __import__(name)
        return views.view(bound)

    return guarded_import


# -- reads --------------------------------------------------------------------------------


def value_guard(refuse: Refuse, views: Views) -> Callable[[Any, str], Any]:
    """What a read hands the module: frames, code, tracebacks, cells and the sandbox's
    own objects refused, a module as its view when it is allowed and refused when not."""

    def check_value(value: Any, what: str) -> Any:
        if isinstance(value, REFUSED_VALUE_TYPES):
            raise refuse(f"{what} is a {type(value).__name__} object, which is not allowed")
        if isinstance(value, ModuleType):
            if not views.may_view(value.__name__):
                raise refuse(f'{what} is the module "{value.__name__}", which is not allowed')
            return views.view(value.__name__)
        return value

    return check_value


def attribute_guard(refuse: Refuse, check_value: Callable[[Any, str], Any]) -> Callable[..., Any]:
    """``getattr`` and ``_getattr_``: the name and the object checked, then the value."""

    def guarded_getattr(obj: Any, name: Any, default: Any = _MISSING) -> Any:
        name = plain_name(name)
        check_attribute(refuse, obj, name)
        value = getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        return check_value(value, f'attribute "{name}"')

    return guarded_getattr


def plain_name(name: Any) -> str:
    """``name`` as a plain ``str``: a subclass of the module's own could answer
    ``startswith`` or ``==`` as it likes, and fool the checks of the name."""
    if not isinstance(name, str):
        raise TypeError(f"attribute name must be a string, not {type(name).__name__}")
    return str.__str__(name)


def check_attribute(refuse: Refuse, obj: Any, name: str) -> None:
    """Refuse reading ``name`` of ``obj``, or of what ``obj`` stands for when it is a
    ``super`` (whose reads are the object's, through its class's bases)."""
    if name.startswith("_"):
        raise refuse(f'attribute "{name}" is not allowed: it starts with "_"')
    if name in INSPECT_ATTRIBUTES:
        raise refuse(f'attribute "{name}" is not allowed: it leads to frames or code')
    for target in _stands_for(obj):
        if name in FORMAT_METHODS and (
            isinstance(target, str) or (isinstance(target, type) and issubclass(target, str))
        ):
            raise refuse(
                f"str.{name} is not allowed: its format strings read attributes unguarded; "
                "use an f-string or %"
            )
        if isinstance(target, INTERNAL_TYPES):
            raise refuse(f"attributes of {type(target).__name__} objects are not allowed")


def _stands_for(obj: Any) -> tuple[Any, ...]:
    if isinstance(obj, super):
        # The proxy stands for its object and class; typeshed does not know these names.
        return (obj, obj.__self__, obj.__self_class__, obj.__thisclass__)  # type: ignore[attr-defined]
    return (obj,)


def hasattr_guard(guarded_getattr: Callable[..., Any]) -> Callable[[Any, Any], bool]:
    def guarded_hasattr(obj: Any, name: Any) -> bool:
        try:
            guarded_getattr(obj, name)
        except AttributeError:
            return False
        return True

    return guarded_hasattr


def item_guard(check_value: Callable[[Any, str], Any]) -> Callable[[Any, Any], Any]:
    def guarded_getitem(obj: Any, key: Any) -> Any:
        return check_value(obj[key], "the item")

    return guarded_getitem


def iteration_guard(check_value: Callable[[Any, str], Any]) -> Callable[[Any], Iterator[Any]]:
    """``_getiter_`` (``for`` loops, comprehensions): every item checked as it comes."""

    def guarded_iter(obj: Any) -> Iterator[Any]:
        for item in obj:
            yield check_value(item, "an item")

    return guarded_iter


# -- writes -------------------------------------------------------------------------------


def write_guard(refuse: Refuse) -> Callable[[Any], Any]:
    """What ``obj.x = ...`` and ``obj[k] = ...`` write to: containers and the module's own
    objects as they are; anything else (a module view, a class from the standard
    library, a builtin) refuses the write."""

    def guard(obj: Any) -> Any:
        if type(obj) in (dict, list, set) or _defined_by_module(obj):
            return obj
        return _ReadOnly(refuse, type(obj).__name__)

    return guard


def setattr_guard(refuse: Refuse) -> Callable[[Any, Any, Any], None]:
    guard = write_guard(refuse)

    def guarded_setattr(obj: Any, name: Any, value: Any) -> None:
        name = plain_name(name)
        if name.startswith("_"):
            raise refuse(f'attribute "{name}" is not allowed: it starts with "_"')
        setattr(guard(obj), name, value)

    return guarded_setattr


def _defined_by_module(obj: Any) -> bool:
    """Instances (and classes) the module's own code defined take attribute writes."""
    cls = obj if isinstance(obj, type) else type(obj)
    return getattr(cls, "__module__", None) == MODULE_NAME


class _ReadOnly:
    """Stands in for an object the module may read but not write; it holds only the
    refusing closure and the type's name, not the object."""

    __slots__ = ("_refuse", "_type_name")
    _refuse: Refuse
    _type_name: str

    def __init__(self, refuse: Refuse, type_name: str) -> None:
        object.__setattr__(self, "_refuse", refuse)
        object.__setattr__(self, "_type_name", type_name)

    def _refuse_write(self, *args: Any) -> None:
        raise self._refuse(f"{self._type_name} objects are read-only here")

    __setattr__ = __delattr__ = __setitem__ = __delitem__ = _refuse_write


# -- builtins and printing ----------------------------------------------------------------


def withheld_builtin(refuse: Refuse, name: str) -> Callable[..., Any]:
    def withheld(*args: Any, **kwargs: Any) -> Any:
        raise refuse(f"{name}() is not available in the sandbox")

    withheld.__name__ = withheld.__qualname__ = name
    return withheld


def print_collector(refuse: Refuse, output: list[str], limit: int) -> Callable[..., _Printer]:
    """RestrictedPython's ``_print_``: printers writing into ``output``, up to ``limit``
    bytes for the whole call."""
    written = [0]

    def write(text: str) -> None:
        written[0] += len(text.encode())
        if written[0] > limit:
            raise refuse(
                f"the module printed more than {limit} bytes (WEFT_SANDBOX_MAX_OUTPUT_BYTES)",
                OutputLimit,
            )
        output.append(text)

    def printer(_getattr_: Any = None) -> _Printer:
        return _Printer(write, output)

    return printer


class _Printer:
    """What ``print`` writes to; it holds the writing closure and the output list only."""

    __slots__ = ("_output", "_write")
    _output: list[str]
    _write: Callable[[str], None]

    def __init__(self, write: Callable[[str], None], output: list[str]) -> None:
        self._write = write
        self._output = output

    def write(self, text: str) -> None:
        self._write(text)

    def __call__(self) -> str:
        return "".join(self._output)

    def _call_print(self, *objects: Any, **kwargs: Any) -> None:
        kwargs["file"] = self
        print(*objects, **kwargs)


#: Values no read hands a module: :data:`INTERNAL_TYPES`, and the objects the guards
#: keep their state in (a walk that reached one would lead to the record of refusals).
REFUSED_VALUE_TYPES = (*INTERNAL_TYPES, Room, Views, _Printer, _ReadOnly)

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

"""The audit hook (PEP 578) a sandbox child adds just before a module's code runs.

Hooks cannot be removed, so once added it holds even if every guard above it fails. It
is made by :func:`install_audit_hook`, and everything it decides on is a constant of its
closure, fixed when it is made: the events it allows (a frozenset copied from
:data:`ALLOWED_EVENTS`, so rebinding that name changes nothing), the one code object it
lets run, and its phase. The hook is stored nowhere but in the interpreter's list of
hooks, which Python code cannot read.

Its phases only go forward. *Armed*: the module's code runs, and every event but the
running of that code object, a public attribute write to the module's own class and
:data:`ALLOWED_EVENTS` is refused. *After the module* (the switch
:func:`install_audit_hook` returns, held by the child's trusted code): only what the
trusted epilogue needs, reading a traceback's frames for the failing line; nothing else,
not even the module's code again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import CodeType, FrameType, TracebackType
from typing import Any

from django_weft.sandbox.restricted import MODULE_NAME

#: Audit events a module's code may cause. Anything else (opening a file, importing,
#: compiling, ``os.*``, ``socket.*``, ``subprocess.*``, ``ctypes.*``, frame and
#: ``gc`` introspection, ``object.__getattr__`` on restricted members ...) is refused.
ALLOWED_EVENTS = frozenset({"builtins.id", "time.sleep"})

#: What the epilogue reads of a traceback to name the module's failing line.
EPILOGUE_READS = frozenset({"tb_frame", "f_code"})

_WRITES = frozenset({"object.__setattr__", "object.__delattr__"})


def install_audit_hook(
    code: CodeType, refuse: Callable[[str], BaseException]
) -> Callable[[], None]:
    """Add the hook, armed for ``code``; return the one-way switch to *after the module*.

    ``refuse`` makes the error the hook raises (the child's, which records the refusal
    and reports it to the host at once).
    """
    allowed = frozenset(ALLOWED_EVENTS)
    epilogue_reads = EPILOGUE_READS
    after_module: list[bool] = []

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if after_module:
            if _epilogue_read(event, args, epilogue_reads):
                return
        elif (
            event in allowed
            or (event == "exec" and bool(args) and args[0] is code)
            or (event in _WRITES and _public_write(args))
        ):
            return
        detail = f" ({args[0]!r})" if args and type(args[0]) in (str, bytes, int) else ""
        raise refuse(f'the sandbox refused the audit event "{event}"{detail}')

    sys.addaudithook(hook)

    def finish() -> None:
        after_module.append(True)

    return finish


def _epilogue_read(event: str, args: tuple[Any, ...], reads: frozenset[str]) -> bool:
    return (
        event == "object.__getattr__"
        and len(args) == 2
        and isinstance(args[0], TracebackType | FrameType)
        and args[1] in reads
    )


def _public_write(args: tuple[Any, ...]) -> bool:
    """Setting a public attribute of a class the module defined (``Counter.total = 0``)."""
    target, name = args[0], args[1]
    return (
        type(name) is str  # a subclass could answer startswith as it likes
        and not name.startswith("_")
        and getattr(target, "__module__", None) == MODULE_NAME
    )

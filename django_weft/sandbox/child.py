"""The sandbox child: ``python -I -m django_weft.sandbox.child``, one call, then exit.

The host writes a *setup* frame (allowed imports, layers to apply, limits); the child
imports the allowed modules, applies its layers and limits, and answers *ready* with
the layers that are active. Only then does the host send the *call*: the module's
source, the callable, the args. The child compiles the source with RestrictedPython,
runs it, and answers once, with the JSON answer or the failure, then exits. A child
is never given a second call, so nothing one module leaves behind reaches another.

While the module runs, ``host(name, *args)`` asks the host to run a host function and
waits for its reply; the host decides whether the module is granted it. The moment a
guard or the audit hook refuses something, the child tells the host in a *refusal*
frame, and the host fails the call with the first one whatever the child sends next.

Stray writes to the standard output go to the standard error, which the host reads
apart: the only way to the host's end of the pipe is :func:`~.protocol.write_frame`.

A setup frame whose ``python_layers`` is ``False`` (trusted code only: the tests of
the kernel layers) runs the module as plain Python instead, in a branch of its own,
:func:`run_call_without_python_layers`.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from collections.abc import Callable
from types import TracebackType
from typing import Any

from django_weft.sandbox import layers, seccomp
from django_weft.sandbox.allowlist import MODULE_NAMES
from django_weft.sandbox.audit import install_audit_hook
from django_weft.sandbox.protocol import (
    EXIT_OUT_OF_MEMORY,
    OUT_OF_MEMORY,
    Limits,
    read_frame,
    write_frame,
)
from django_weft.sandbox.restricted import (
    LAZY_IMPORTS,
    PRELOADS,
    ModuleSourceError,
    Refused,
    Room,
    compile_module,
    module_filename,
)
from django_weft.sandbox.views import is_allowed

#: Largest setup frame the child accepts.
SETUP_LIMIT = 64 * 1024


class HostError(Exception):
    """A host function failed, or refused its args; the module may catch it."""


class Failure(Exception):
    """Ends the call with ``kind`` and ``message``; the host turns each kind into its error
    (:data:`django_weft.sandbox.errors.FAILURES`)."""

    def __init__(self, kind: str, message: str, traceback: TracebackType | None = None) -> None:
        self.kind = kind
        self.message = message
        self.traceback = traceback
        super().__init__(message)


def standard_library_paths() -> list[str]:
    """The directories of the standard library: all the files a module may read."""
    paths = sysconfig.get_paths()
    found = {os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib")}
    return sorted(path for path in found if os.path.isdir(path))


def set_up(setup: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Import the allowed modules and apply every layer; return which are active."""
    for name in _modules_to_import(setup):
        try:
            __import__(name)
        except ImportError:
            continue  # an allowed name this Python lacks: importing it will fail later
        for lazy in (*LAZY_IMPORTS.get(name, ()), *PRELOADS.get(name, ())):
            __import__(lazy)
    report: dict[str, dict[str, Any]] = {}
    wanted = set(setup["layers"])
    steps: list[tuple[str, Callable[[], str]]] = [
        ("network_namespace", layers.enter_network_namespace),
        ("landlock", lambda: layers.apply_landlock(standard_library_paths())),
    ]
    for name, apply in steps:
        report[name] = _apply_optional(name in wanted, apply)
    limits = Limits.from_dict(setup["limits"])
    layers.apply_limits(limits)
    report["limits"] = {"active": True}
    report["seccomp"] = _apply_optional("seccomp" in wanted, seccomp.apply_seccomp)
    return report


def _modules_to_import(setup: dict[str, Any]) -> list[str]:
    """The allowed modules, and the allow-listed submodules of them (``collections.abc``):
    once the module runs, nothing more can be imported."""
    allowed = setup["imports"]
    submodules = [
        name
        for name in (*MODULE_NAMES, *setup["import_names"])
        if "." in name and is_allowed(name, allowed)
    ]
    return list(dict.fromkeys((*allowed, *submodules)))


def _apply_optional(wanted: bool, apply: Callable[[], str]) -> dict[str, Any]:
    if not wanted:
        return {"active": False, "reason": "switched off (WEFT_SANDBOX_LAYERS)"}
    try:
        return {"active": True, "detail": apply()}
    except layers.LayerFailed as error:
        return {"active": False, "reason": str(error)}


def host_caller(inbox: int, outbox: int, reply_limit: int) -> Callable[..., Any]:
    """The module's ``host(name, *args)``: one frame out, one reply in, per call.

    A closure, so the module holds no object with the pipes' descriptors as attributes.
    """
    calls = [0]

    def host(name: str, *args: Any) -> Any:
        if not isinstance(name, str):
            raise HostError(f"a host function is named by a string, not {type(name).__name__}")
        try:
            json.dumps(args, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise HostError(f'the args of host function "{name}" are not JSON: {error}') from None
        calls[0] += 1
        number = calls[0]
        write_frame(outbox, {"type": "host_call", "id": number, "name": name, "args": list(args)})
        reply = read_frame(inbox, reply_limit)
        if reply.get("type") != "host_reply" or reply.get("id") != number:
            raise Failure("raised", "the host sent something other than the reply")
        if not reply.get("ok"):
            raise HostError(str(reply.get("error", "the host function failed")))
        return reply.get("value")

    return host


def refusal_reporter(outbox: int) -> Callable[[Refused], None]:
    """Sends a refusal to the host the moment it is made: a ``refusal`` frame."""

    def report(error: Refused) -> None:
        write_frame(outbox, {"type": "refusal", "kind": error.kind, "message": str(error)})

    return report


def run_call(
    call: dict[str, Any],
    setup: dict[str, Any],
    host: Callable[..., Any],
    report: Callable[[Refused], None],
) -> dict[str, Any]:
    """Compile and run the module, and call its callable: the answer frame, or a failure.

    ``report`` tells the host of the first refusal as it happens.
    """
    limits = setup["limits"]
    room = Room(
        allowed_imports=setup["imports"],
        import_names=setup["import_names"],
        output_limit=limits["output_bytes"],
        report=report,
    )
    try:
        try:
            code = compile_module(call["source"], call["module"])
        except ModuleSourceError as error:
            raise Failure("syntax", str(error)) from None
        module_globals = room.module_globals(
            {"context": call["context"], "host": host, "HostError": HostError}
        )
        after_module = install_audit_hook(code, room.refuse)
        try:
            encoded = _call_module(room, code, module_globals, call)
        finally:
            after_module()
    except Failure as failure:
        message, frames = failure.message, _where(failure.traceback, call["module"])
        if frames:
            message += f" (line {frames[-1][0]})"
        return {**_failure(room, failure.kind, message), "frames": frames}
    size = len(encoded.encode())
    if size > limits["answer_bytes"]:
        return _failure(
            room,
            "limit",
            f"the answer is {size} bytes, over the limit of {limits['answer_bytes']} "
            "(WEFT_SANDBOX_MAX_ANSWER_BYTES)",
        )
    return {"type": "answer", "value": json.loads(encoded), "output": "".join(room.output)}


def _call_module(
    room: Room, code: Any, module_globals: dict[str, Any], call: dict[str, Any]
) -> str:
    """Run the module and its callable, and return the answer as JSON text.

    Everything here may run the module's code (its ``__str__``, its ``items()``), so it
    all happens while the audit hook is armed, and the answer leaves as plain text.
    """
    name, method, args = call["module"], call["method"], call["args"]
    try:
        exec(code, module_globals)
        target = module_globals.get(method)
        if not callable(target):
            has = "no callable" if target is None else f"a {type(target).__name__}, not a callable,"
            raise Failure("missing_method", f'module "{name}" has {has} named "{method}"')
        answer = target(*args) if isinstance(args, list) else target(**args)
        if room.first_refusal is None:
            try:
                return json.dumps(answer, allow_nan=False)
            except (TypeError, ValueError) as error:
                raise Failure("invalid_answer", f"the answer is not JSON: {error}") from None
    except Failure:
        raise
    except Refused:
        pass  # reported below, as the first refusal
    except MemoryError:
        raise Failure("limit", OUT_OF_MEMORY) from None
    except RecursionError:
        raise Failure(
            "limit", f"the module recursed deeper than {sys.getrecursionlimit()} calls"
        ) from None
    except BaseException as error:
        raise Failure("raised", f"{type(error).__name__}: {error}", error.__traceback__) from None
    first = room.first_refusal
    assert first is not None
    raise Failure(first.kind, str(first))


def _where(traceback: TracebackType | None, name: str) -> list[list[Any]]:
    """The ``[line, function]`` of each frame of the module's own code the error passed
    through, outermost first (the host renders them: :mod:`~.module_frames`)."""
    frames: list[list[Any]] = []
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if code.co_filename == module_filename(name):
            frames.append([traceback.tb_lineno, code.co_name])
        traceback = traceback.tb_next
    return frames


def _failure(room: Room, kind: str, message: str) -> dict[str, Any]:
    return {"type": "failure", "kind": kind, "message": message, "output": "".join(room.output)}


def main() -> None:
    inbox, outbox = 0, os.dup(1)
    os.dup2(2, 1)
    setup = read_frame(inbox, SETUP_LIMIT)
    try:
        report = set_up(setup)
    except layers.LayerFailed as error:
        write_frame(outbox, {"type": "failure", "kind": "layer", "message": str(error)})
        os._exit(1)
    write_frame(outbox, {"type": "ready", "layers": report})
    reply_limit = setup["limits"]["answer_bytes"] + 1024
    try:
        call = read_frame(inbox, setup["call_limit"])
    except EOFError:
        os._exit(0)  # a pooled child the host no longer needs
    host = host_caller(inbox, outbox, reply_limit)
    try:
        if setup.get("python_layers") is False:
            write_frame(outbox, run_call_without_python_layers(call, host))
        else:
            write_frame(outbox, run_call(call, setup, host, refusal_reporter(outbox)))
    except MemoryError:
        # What the module left behind fills the memory still: not even the failure
        # frame fits. The exit status says it instead.
        os._exit(EXIT_OUT_OF_MEMORY)
    os._exit(0)


def run_call_without_python_layers(
    call: dict[str, Any], host: Callable[..., Any]
) -> dict[str, Any]:
    """Run the module as plain Python: no RestrictedPython, no guards, no audit hook.

    Only the kernel layers and the limits hold here, which is what the tests of those
    layers need to see: code that reaches everything Python reaches. Only trusted code
    can ask for it (``RoomConfig(python_layers=False)``, in the setup frame, which no
    module writes); any other value of the flag runs :func:`run_call`.
    """
    module_globals: dict[str, Any] = {
        "__name__": call["module"],
        "context": call["context"],
        "host": host,
        "HostError": HostError,
    }
    try:
        exec(compile(call["source"], call["module"], "exec"), module_globals)
        target = module_globals[call["method"]]
        args = call["args"]
        answer = target(*args) if isinstance(args, list) else target(**args)
        return {"type": "answer", "value": json.loads(json.dumps(answer)), "output": ""}
    except BaseException as error:
        return {"type": "failure", "kind": "raised", "message": f"{type(error).__name__}: {error}"}


if __name__ == "__main__":
    main()

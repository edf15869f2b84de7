"""One sandbox child process, seen from the host: started, set up, given one call, killed.

The host never trusts what the child sends: frames are bounded before they are read,
every message is checked against the protocol, host calls against the module's grants,
and the wall clock is the host's own. Whatever happens, the child's process group is
killed and reaped before :meth:`Child.call` returns or raises.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django_weft.jobs.storable import find_unstorable, storable_text
from django_weft.sandbox.config import CALL_LIMIT, SETUP_SECONDS, RoomConfig
from django_weft.sandbox.errors import (
    FAILURES,
    ChildFailed,
    HostCallRefused,
    InvalidAnswer,
    LayerUnavailable,
    LimitExceeded,
    ProtocolViolation,
    SandboxError,
)
from django_weft.sandbox.host import HostFunction
from django_weft.sandbox.module_frames import frames_from_child, module_traceback
from django_weft.sandbox.protocol import (
    EXIT_OUT_OF_MEMORY,
    MAX_DEPTH,
    OUT_OF_MEMORY,
    FrameReader,
    FrameTooDeep,
    FrameTooLarge,
    ProtocolError,
    encode,
    write_frame,
)

logger = logging.getLogger("django_weft.sandbox")

#: How often, at least, the host looks up from the pipe to call ``check()``.
CHECK_INTERVAL = 0.1

#: How much of the child's standard error the host keeps (the tail).
STDERR_KEPT = 8 * 1024

Check = Callable[[], None]

#: The kinds of failure a guard or the audit hook can refuse with, as the child reports it.
REFUSAL_KINDS = frozenset({"forbidden_access", "forbidden_import", "limit"})


@dataclass(frozen=True)
class ModuleCall:
    """What one call runs: a module's source, the callable, its args, and its grants."""

    module: str
    source: str
    method: str = "default"
    args: list[Any] | dict[str, Any] = field(default_factory=list)
    grants: Sequence[str] = ()
    #: What the module reads as ``context`` (the run, its due), JSON.
    context: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    """A call's JSON answer and what the module printed."""

    value: Any
    output: str


class Child:
    """A started child; :meth:`wait_ready` then :meth:`call`, once."""

    def __init__(
        self, command: Sequence[str], config: RoomConfig, *, bubblewrap: dict[str, Any]
    ) -> None:
        self.config = config
        #: The host's report of the bubblewrap layer for this child.
        self.bubblewrap = bubblewrap
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            process_group=0,
            env={},
        )
        stdin, stdout, stderr = self.process.stdin, self.process.stdout, self.process.stderr
        assert stdin is not None
        assert stdout is not None
        assert stderr is not None
        self._stdin, self._stdout, self._stderr = stdin.fileno(), stdout.fileno(), stderr.fileno()
        for descriptor in (self._stdout, self._stderr):
            os.set_blocking(descriptor, False)
        self._reader = FrameReader(config.frame_limit)
        self._pending: list[dict[str, Any]] = []
        self._stderr_tail = b""
        self._closed: set[int] = set()
        self._status: int | None = None
        self._cpu_seconds = 0.0
        self.layers: dict[str, dict[str, Any]] | None = None
        self._send(config.setup_frame())

    # -- the conversation -----------------------------------------------------------------

    def wait_ready(self, check: Check | None = None) -> dict[str, dict[str, Any]]:
        """The child's report of its layers, once it has applied them."""
        if self.layers is None:
            message = self._next(self.started + SETUP_SECONDS, check, "set up")
            if message["type"] == "failure" and message.get("kind") == "layer":
                self.kill()
                raise LayerUnavailable(f"the sandbox could not start: {message.get('message')}")
            if message["type"] != "ready" or not isinstance(message.get("layers"), dict):
                raise self._violation(f'a "{message["type"]}" message instead of "ready"')
            self.layers = message["layers"]
        return self.layers

    def call(
        self,
        call: ModuleCall,
        *,
        host: Callable[[str], HostFunction | None],
        check: Check | None = None,
    ) -> Answer:
        """Run ``call`` in the child; the child is dead and reaped when this returns."""
        try:
            self.wait_ready(check)
            frame = {
                "type": "call",
                "module": call.module,
                "source": call.source,
                "method": call.method,
                "args": call.args,
                "context": dict(call.context),
            }
            if len(encode(frame)) > CALL_LIMIT:
                raise LimitExceeded(f"the call is over {CALL_LIMIT} bytes (source and args)")
            self._send(frame)
            return self._converse(call, host, check)
        finally:
            self.kill()

    def _converse(
        self,
        call: ModuleCall,
        host: Callable[[str], HostFunction | None],
        check: Check | None,
    ) -> Answer:
        """Serve the child's messages until its answer or failure.

        Once the child reported a refusal, the call fails with that first refusal
        whatever follows (an answer, a failure, a limit, the child's death), and no host
        function runs for it any more.
        """
        refusal: dict[str, Any] | None = None
        deadline = time.monotonic() + self.config.wall_seconds
        try:
            while True:
                message = self._next(deadline, check, "answer")
                if message["type"] == "refusal":
                    refusal = refusal or self._refusal(message)
                elif refusal is not None and message["type"] in ("host_call", "answer", "failure"):
                    break
                elif message["type"] == "host_call":
                    self._host_call(message, call, host)
                elif message["type"] == "answer":
                    return _answer(message)
                elif message["type"] == "failure":
                    raise self._failure(message, call)
                else:
                    raise self._violation(f'an unexpected "{message["type"]}" message')
        except SandboxError:
            if refusal is None:
                raise
            raise self._failure(refusal) from None
        raise self._failure({**refusal, "output": message.get("output")})

    def _refusal(self, message: dict[str, Any]) -> dict[str, Any]:
        """A refusal frame, checked: a kind a refusal can have and a message."""
        kind, text = message.get("kind"), message.get("message")
        if kind not in REFUSAL_KINDS or not isinstance(text, str):
            raise self._violation(f"a refusal of kind {kind!r}")
        return {"kind": kind, "message": text}

    def _host_call(
        self,
        message: dict[str, Any],
        call: ModuleCall,
        host: Callable[[str], HostFunction | None],
    ) -> None:
        name, args, number = message.get("name"), message.get("args"), message.get("id")
        if not isinstance(name, str) or not isinstance(args, list) or not isinstance(number, int):
            raise self._violation("a host call without a name, args and id")
        if name not in call.grants:
            granted = ", ".join(call.grants) or "none"
            raise HostCallRefused(
                f'module "{call.module}" called the host function "{name}", which it is not '
                f"granted (its grants: {granted})"
            )
        function = host(name)
        if function is None:
            raise HostCallRefused(
                f'module "{call.module}" called the host function "{name}": it is granted, but '
                "no host function of that name is registered"
            )
        try:
            value = function(*args)
            encoded = json.dumps(value, allow_nan=False)
        except Exception as error:
            # The module hears what went wrong, as it would from any function it calls.
            logger.info("host function %s failed for module %s: %s", name, call.module, error)
            reply = {"type": "host_reply", "id": number, "ok": False, "error": _describe(error)}
        else:
            if len(encoded) > self.config.limits.answer_bytes:
                reply = {
                    "type": "host_reply",
                    "id": number,
                    "ok": False,
                    "error": f'the answer of host function "{name}" is {len(encoded)} bytes, '
                    f"over the limit of {self.config.limits.answer_bytes}",
                }
            else:
                reply = {"type": "host_reply", "id": number, "ok": True, "value": value}
        self._send(reply)

    def _failure(self, message: dict[str, Any], call: ModuleCall | None = None) -> SandboxError:
        """The error a failure frame ends the call with; with ``call``, the module's own
        frames the child named are a note on it (:mod:`~.module_frames`)."""
        kind = message.get("kind")
        error_class = FAILURES.get(kind) if isinstance(kind, str) else None
        if error_class is None:
            return self._violation(f"a failure of unknown kind {kind!r}")
        error = error_class(_text(message.get("message")), output=_text(message.get("output")))
        if call is not None:
            frames = frames_from_child(message.get("frames"), len(call.source.splitlines()))
            note = module_traceback(call.module, call.source, frames)
            if note:
                error.add_note(storable_text(note))
        return error

    def _violation(self, what: str) -> ProtocolViolation:
        self.kill()
        return ProtocolViolation(f"the sandbox child broke the protocol ({what}) and was killed")

    # -- the pipes ------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(BrokenPipeError):  # the child is gone; its pipe says why
            write_frame(self._stdin, message)

    def _next(self, deadline: float, check: Check | None, waiting_for: str) -> dict[str, Any]:
        """The next message from the child, calling ``check`` at least every 0.1 s."""
        with selectors.DefaultSelector() as selector:
            for descriptor in (self._stdout, self._stderr):
                if descriptor not in self._closed:
                    selector.register(descriptor, selectors.EVENT_READ)
            while not self._pending:
                if self._stdout in self._closed:
                    raise self._died(waiting_for)
                if check is not None:
                    try:
                        check()
                    except BaseException:
                        self.kill()
                        raise
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.kill()
                    if waiting_for == "answer":
                        raise LimitExceeded(
                            f"the module ran past the wall-clock limit of "
                            f"{self.config.wall_seconds:g} s (WEFT_SANDBOX_WALL_SECONDS)"
                        )
                    raise ChildFailed(
                        f"the sandbox child did not {waiting_for} in {SETUP_SECONDS:g} s"
                    )
                for key, _ in selector.select(min(remaining, CHECK_INTERVAL)):
                    if not self._read(key.fd):
                        selector.unregister(key.fd)
                        self._closed.add(key.fd)
            return self._pending.pop(0)

    def _read(self, descriptor: int) -> bool:
        """Read what is there; False once the pipe is closed."""
        try:
            data = os.read(descriptor, 65536)
        except BlockingIOError:
            return True
        if not data:
            return False
        if descriptor == self._stderr:
            self._stderr_tail = (self._stderr_tail + data)[-STDERR_KEPT:]
            return True
        try:
            self._pending += self._reader.feed(data)
        except FrameTooDeep as error:
            self.kill()
            raise InvalidAnswer(
                f"the sandbox child sent a message nesting arrays and objects {error.depth} "
                f"deep, over the limit of {MAX_DEPTH} (an answer, or a host call's args, may "
                f"nest {MAX_DEPTH - 1})"
            ) from None
        except FrameTooLarge as error:
            self.kill()
            raise LimitExceeded(
                f"the sandbox child sent {error.length} bytes at once, over the limit of "
                f"{error.limit} (WEFT_SANDBOX_MAX_ANSWER_BYTES and WEFT_SANDBOX_MAX_OUTPUT_BYTES)"
            ) from None
        except ProtocolError as error:
            raise self._violation(str(error)) from None
        return True

    def _died(self, waiting_for: str) -> SandboxError:
        """Why the child closed its pipe before it sent its ``waiting_for``.

        The CPU limit kills with SIGXCPU past its soft limit and SIGKILL past its hard
        one, which a child that ignores SIGXCPU (or runs as PID 1 of bubblewrap's PID
        namespace, which never receives it) meets a second later: a SIGKILL the host did
        not send, after the child used its CPU time, is the CPU limit too. Under
        bubblewrap the status is bwrap's, which exits with 128 + the child's signal, and
        the CPU time is the child's only because bwrap reaps the child itself
        (``--as-pid-1``, see :func:`~django_weft.sandbox.bubblewrap.command_prefix`).
        """
        self.kill()
        status, cpu = self._status, self._cpu_seconds
        if status is not None and status > 128 and self.bubblewrap.get("active"):
            status = 128 - status
        limits = self.config.limits
        if status == -signal.SIGXCPU or (status == -signal.SIGKILL and cpu >= limits.cpu_seconds):
            return LimitExceeded(
                f"the module used its {limits.cpu_seconds} s of CPU time "
                "(WEFT_SANDBOX_CPU_SECONDS) and was killed"
            )
        if status == EXIT_OUT_OF_MEMORY:
            return LimitExceeded(OUT_OF_MEMORY)
        if status is not None and status < 0:
            how = f"was killed by {signal.Signals(-status).name}"
        else:
            how = f"exited with code {status}"
        stderr = self._stderr_tail.decode(errors="replace").strip()
        detail = f": {stderr.splitlines()[-1]}" if stderr else ""
        return ChildFailed(f"the sandbox child {how} before its {waiting_for}{detail}")

    def kill(self) -> None:
        """Kill the child's process group and reap the child; how it ended is kept.

        A child that already exited is a zombie until reaped, so its group can still be
        signalled and its own exit status (a CPU-limit signal, say) is what is read.
        """
        if self._status is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.process.returncode is None:
            _, status, usage = os.wait4(self.process.pid, 0)
            self.process.returncode = os.waitstatus_to_exitcode(status)
            self._cpu_seconds = usage.ru_utime + usage.ru_stime
        self._status = self.process.returncode
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    @property
    def alive(self) -> bool:
        """Whether the child still waits (a pooled child may have died meanwhile)."""
        return self._status is None and self.process.poll() is None


def _answer(message: dict[str, Any]) -> Answer:
    """The answer a message carries; :class:`InvalidAnswer` if it could not be stored."""
    value, output = message.get("value"), _text(message.get("output"))
    found = find_unstorable(value, "answer")
    if found is not None:
        raise InvalidAnswer(
            f"the answer cannot be stored: {found.where}: {found.problem}", output=output
        )
    return Answer(value, output)


def _text(value: object) -> str:
    """Text from the child (output, a failure's message), as the run may store it."""
    return storable_text(value) if isinstance(value, str) else ""


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"

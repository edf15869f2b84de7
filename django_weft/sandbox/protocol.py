"""The pipe between the host and a sandbox child: length-prefixed JSON frames.

Both sides import this module, so it holds only what they share: the framing, the
names of the layers and the limits. A frame is a 4-byte
big-endian length followed by that many bytes of UTF-8 JSON holding one object with a
``type``. The reader refuses a frame longer than the limit it was given before reading
its body, so a child cannot make the host buffer more than that, and a frame nested
deeper than :data:`MAX_DEPTH` before decoding it, so a child cannot make the host's JSON
decoder recurse past Python's stack (a ``RecursionError`` in the middle of the worker).
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import asdict, dataclass
from itertools import accumulate
from typing import Any

HEADER = struct.Struct(">I")

#: Deepest nesting of arrays and objects a frame may hold, the frame's own object
#: included (so an answer may nest one level less). Far below Python's recursion limit
#: of 1,000, which the decoder shares with whatever called it.
MAX_DEPTH = 128

#: A JSON string, escapes included: what may hold brackets that do not nest.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_DEPTH = {"[": 1, "{": 1, "]": -1, "}": -1}

#: Layers every run has; a child that cannot apply one of them refuses to run.
MANDATORY_LAYERS = ("limits", "restricted_python", "audit_hook")
#: Layers applied whenever the kernel allows them, each switchable by a setting.
OPTIONAL_LAYERS = ("network_namespace", "landlock", "seccomp", "bubblewrap")


#: The child's exit status when memory ran out so completely that no frame could say it.
EXIT_OUT_OF_MEMORY = 3
#: How a call that ran out of memory fails, whichever side finds out.
OUT_OF_MEMORY = "the module ran out of memory (WEFT_SANDBOX_MEMORY_BYTES)"


@dataclass(frozen=True)
class Limits:
    """What one call may use. The wall clock is the host's to enforce, not the child's."""

    cpu_seconds: float
    memory_bytes: int
    output_bytes: int
    answer_bytes: int
    #: Descriptors the child may hold: the pipes and what the interpreter keeps open.
    open_files: int = 16
    #: Bytes the child may write to files: none.
    file_bytes: int = 0
    #: New processes the child may create: none (root ignores this; seccomp does not).
    processes: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Limits:
        return cls(**data)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ProtocolError(Exception):
    """A frame that breaks the protocol: too long, not JSON, not an object with a type."""


def encode(message: dict[str, Any]) -> bytes:
    """One frame holding ``message``; NaN and infinities are refused, as JSON has none."""
    body = json.dumps(message, allow_nan=False, separators=(",", ":")).encode()
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> dict[str, Any]:
    """The message in a frame's ``body``: UTF-8 JSON, an object with a type, at most
    :data:`MAX_DEPTH` deep (:class:`FrameTooDeep` otherwise, before any decoding)."""
    try:
        text = body.decode()
    except UnicodeDecodeError as error:
        raise ProtocolError(f"a frame that is not JSON: {error}") from None
    depth = nesting(text)
    if depth > MAX_DEPTH:
        raise FrameTooDeep(depth)
    try:
        message = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as error:
        raise ProtocolError(f"a frame that is not JSON: {error}") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("a frame that is not an object with a type")
    return message


def nesting(text: str) -> int:
    """How deep arrays and objects nest in the JSON ``text``, read without decoding it.

    Strings go first (a bracket in a string does not nest), then everything but the
    brackets; the deepest point is the running sum of what is left, computed in C.
    """
    brackets = _NOT_A_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_BRACKET_DEPTH.__getitem__, brackets)), default=0)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class FrameReader:
    """Splits bytes read from a pipe into messages, refusing frames over ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        messages = []
        while len(self._buffer) >= HEADER.size:
            (length,) = HEADER.unpack_from(self._buffer)
            if length > self.limit:
                raise FrameTooLarge(length, self.limit)
            if len(self._buffer) < HEADER.size + length:
                break
            body = bytes(self._buffer[HEADER.size : HEADER.size + length])
            del self._buffer[: HEADER.size + length]
            messages.append(decode(body))
        return messages


class FrameTooDeep(ProtocolError):
    def __init__(self, depth: int) -> None:
        self.depth = depth
        super().__init__(
            f"a frame nesting arrays and objects {depth} deep, over the limit of {MAX_DEPTH}"
        )


class FrameTooLarge(ProtocolError):
    def __init__(self, length: int, limit: int) -> None:
        self.length = length
        self.limit = limit
        super().__init__(f"a frame of {length} bytes, over the limit of {limit}")


def write_frame(fd: int, message: dict[str, Any]) -> None:
    """Write one frame to ``fd``, blocking until all of it is written."""
    view = memoryview(encode(message))
    while view:
        view = view[os.write(fd, view) :]


def read_frame(fd: int, limit: int) -> dict[str, Any]:
    """Read one frame from ``fd``, blocking; EOFError if the other side closed the pipe."""
    header = _read_exactly(fd, HEADER.size)
    (length,) = HEADER.unpack(header)
    if length > limit:
        raise FrameTooLarge(length, limit)
    return decode(_read_exactly(fd, length))


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            raise EOFError("the other side closed the pipe")
        chunks += chunk
    return bytes(chunks)

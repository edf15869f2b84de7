"""A sandbox child that has been taken over: it speaks the protocol badly on purpose.

``python rogue_child.py BEHAVIOUR``; the host must end each call with a clear error and
kill it. It uses only the standard library, as a child that lost its guards would.
"""

import json
import os
import struct
import sys
import time


def frame(message: object) -> bytes:
    body = json.dumps(message).encode()
    return struct.pack(">I", len(body)) + body


def frame_text(body: str) -> bytes:
    """A frame of ``body`` as it is, for JSON that ``json.dumps`` would not write."""
    return struct.pack(">I", len(body)) + body.encode()


def read_frame() -> dict:
    (length,) = struct.unpack(">I", os.read(0, 4))
    body = b""
    while len(body) < length:
        body += os.read(0, length - len(body))
    return json.loads(body)


# A child that was taken over says its layers are on: the host cannot tell.
READY = {
    "type": "ready",
    "layers": {
        name: {"active": True} for name in ("limits", "network_namespace", "landlock", "seccomp")
    },
}
REFUSAL = {"type": "refusal", "kind": "forbidden_access", "message": "the first refusal"}
RECORD_CALL = {"type": "host_call", "id": 1, "name": "tests.record", "args": [1]}

BEHAVIOURS = {
    # Bytes that are not a frame of JSON.
    "garbage": lambda: os.write(1, struct.pack(">I", 5) + b"nope!"),
    # A frame that claims to be far larger than anything the host accepts.
    "oversized": lambda: os.write(1, struct.pack(">I", 2**31)),
    # A message type the protocol does not have.
    "unknown": lambda: os.write(1, frame({"type": "take_over", "what": "the host"})),
    # The setup report where the answer should come.
    "ready_twice": lambda: os.write(1, frame(READY)),
    # A host call for a function the module was never granted.
    "ungranted": lambda: os.write(
        1, frame({"type": "host_call", "id": 1, "name": "tests.secret", "args": []})
    ),
    # A host call with no name.
    "nameless_call": lambda: os.write(1, frame({"type": "host_call", "id": 1, "args": []})),
    # A failure of a kind the protocol does not know.
    "bad_failure": lambda: os.write(
        1, frame({"type": "failure", "kind": "victory", "message": ""})
    ),
    # An answer nested 100,000 deep: decoding it would recurse past Python's stack.
    "deep": lambda: os.write(
        1, frame_text('{"type":"answer","value":' + "[" * 100_000 + "]" * 100_000 + "}")
    ),
    # A refusal, then an answer as if nothing had been refused (a module that erased the
    # child's record of it).
    "refusal_then_answer": lambda: os.write(
        1, frame(REFUSAL) + frame({"type": "answer", "value": "erased", "output": "printed"})
    ),
    # A refusal, then a host call for a function the module is granted.
    "refusal_then_host_call": lambda: os.write(
        1,
        frame(REFUSAL) + frame({"type": "host_call", "id": 1, "name": "tests.record", "args": []}),
    ),
    # A refusal of a kind no guard refuses with.
    "bad_refusal": lambda: os.write(
        1, frame({"type": "refusal", "kind": "victory", "message": ""})
    ),
    # Silence until the wall clock runs out.
    "silent": lambda: time.sleep(3600),
    # Exit without an answer.
    "exit": lambda: os._exit(5),
}


def main() -> None:
    behaviour = sys.argv[1]
    read_frame()  # setup
    os.write(1, frame(READY))
    read_frame()  # the call
    BEHAVIOURS[behaviour]()
    time.sleep(3600)


if __name__ == "__main__":
    main()

"""A stored module's own frames in the traceback of a run it failed.

The child names the frames of the module's code an exception passed through, as
``[line, function]`` pairs; the host, which never trusts the child, keeps only pairs of
the right shape whose line exists in the source it sent, at most :data:`MAX_FRAMES` of
them, and reads each line's text from that source itself, so a compromised child can
neither make the traceback lie about the code nor make it grow without bound. The result
is a note (PEP 678) on the error, which Python's traceback printing, and so the run's
stored traceback, shows under the error.

Pure: no database, no processes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Frames kept, the innermost ones: the frame that raised is what an operator reads first.
MAX_FRAMES = 50
#: What a function's name may be: an identifier, or Python's ``<lambda>``, ``<module>``,
#: ``<listcomp>`` and the like.
FUNCTION_NAME = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]{0,99}|<[a-z]{1,20}>)$")


def frames_from_child(value: object, line_count: int) -> list[tuple[int, str]]:
    """The well-formed ``[line, function]`` pairs of ``value``, the last :data:`MAX_FRAMES`.

    Anything else the child sent (not a list, a line outside ``1..line_count``, a name
    that is not one) is left out, not trusted.
    """
    if not isinstance(value, list):
        return []
    frames = []
    for item in value[-MAX_FRAMES:]:
        if not isinstance(item, list) or len(item) != 2:
            continue
        line, function = item
        if (
            type(line) is int
            and 1 <= line <= line_count
            and isinstance(function, str)
            and FUNCTION_NAME.match(function)
        ):
            frames.append((line, function))
    return frames


def module_traceback(name: str, source: str, frames: Sequence[tuple[int, str]]) -> str:
    """The module's frames as Python prints a traceback, its stored name as the file name;
    blank when there are none."""
    if not frames:
        return ""
    lines = source.splitlines()
    printed = [f'Traceback of stored module "{name}" (most recent call last):']
    for line, function in frames:
        printed.append(f'  File "{name}", line {line}, in {function}')
        text = lines[line - 1].strip() if line <= len(lines) else ""
        if text:
            printed.append(f"    {text}")
    return "\n".join(printed)

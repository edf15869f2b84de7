"""NUL characters (``\\u0000``): where one hides in a value, and how text shows one.

PostgreSQL stores neither: a ``jsonb`` column refuses ``\\u0000`` in any string and a
``text`` column refuses the 0x00 byte, each with a ``DataError`` that would end a start,
a run or a whole round of finishes far from the value that caused it. SQLite stores
both, so a value that works in development would fail in production. Hence one rule on
every database, applied where JSON or text from a job or a client is written:

- JSON (args, results, documents, a module's answer) holding a NUL is *refused*, naming
  the path of the first one (:func:`where_nul`): it is data, and changing it silently
  would store something nobody sent;
- text that only reports (output, error messages, tracebacks) has each NUL *shown* as
  U+2400 SYMBOL FOR NULL (:func:`escape_nul`), so the report is kept whole.

Pure: no Django, no database.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

NUL = "\x00"

#: What stands for a NUL in stored text: U+2400 SYMBOL FOR NULL, "␀".
NUL_SHOWN = "\u2400"

#: Why a value holding a NUL is refused, as the refusal says it after the path.
NUL_REFUSAL = "NUL characters (\\u0000) cannot be stored"


def where_nul(value: Any, path: str = "") -> str | None:
    """The path of the first NUL in ``value`` (in a string or a key), or None.

    Paths read like JavaScript from ``path``: ``args.items[2].name``, and a key that is
    not a name in brackets as JSON, ``result["a b"]``. A NUL in a key names that key.
    Walked with a stack of its own, so a deeply nested value cannot exhaust Python's.
    """
    pending: list[tuple[Any, str]] = [(value, path)]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str):
            if NUL in item:
                return where
        elif isinstance(item, Mapping):
            # A key goes first, as a string at its own path, then what it holds.
            children: list[tuple[Any, str]] = []
            for key, child in item.items():
                inner = _step(where, str(key))
                children += [(str(key), inner), (child, inner)]
            pending.extend(reversed(children))
        elif isinstance(item, list | tuple):
            indexed = [(child, f"{where}[{index}]") for index, child in enumerate(item)]
            pending.extend(reversed(indexed))
    return None


def escape_nul(text: str) -> str:
    """``text`` with each NUL shown as ``NUL_SHOWN``."""
    return text.replace(NUL, NUL_SHOWN)


def _step(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"

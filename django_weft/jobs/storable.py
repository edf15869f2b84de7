"""What JSON and text the database can store: where an unstorable character or number
hides in a value, and how stored text shows one.

PostgreSQL stores none of these: a ``jsonb`` column refuses ``\\u0000`` in any string,
NaN and the infinities; a ``text`` column refuses the 0x00 byte; and a lone surrogate
(``\\ud800`` to ``\\udfff``) is not UTF-8, so neither can hold it. Each fails with an error
that would end a start, a run or a whole round of finishes far from the value that
caused it, and SQLite stores most of them, so a value that works in development would
fail in production. Hence one rule on every database, applied where JSON or text from a
job or a client is written:

- JSON (args, results, documents, a module's answer, an idempotency key) holding one is
  *refused*, naming the path of the first (:func:`find_unstorable`): it is data, and
  changing it silently would store something nobody sent;
- text that only reports (output, error messages, tracebacks) is *shown* storable
  (:func:`storable_text`): each NUL as U+2400 SYMBOL FOR NULL, each lone surrogate as
  U+FFFD, so the report is kept whole.

Pure: no Django, no database.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

NUL = "\x00"

#: What stands for a NUL in stored text: U+2400 SYMBOL FOR NULL, "␀".
NUL_SHOWN = "\u2400"

#: What stands for a lone surrogate in stored text: U+FFFD REPLACEMENT CHARACTER.
SURROGATE_SHOWN = "\ufffd"

#: Why a value holding each is refused, as the refusal says it after the path.
NUL_REFUSAL = "NUL characters (\\u0000) cannot be stored"
SURROGATE_REFUSAL = "lone surrogates (\\ud800 to \\udfff) cannot be stored"
NOT_FINITE_REFUSAL = "NaN and infinities cannot be stored"

_SURROGATE = re.compile("[\ud800-\udfff]")


class Unstorable(NamedTuple):
    """The first unstorable part of a value: its path, and why."""

    where: str
    problem: str


def find_unstorable(value: Any, path: str = "") -> Unstorable | None:
    """The first NUL, lone surrogate (in a string or a key) or non-finite number of
    ``value``, or None.

    Paths read like JavaScript from ``path``: ``args.items[2].name``, and a key that is
    not a name in brackets as JSON, ``result["a b"]``. A bad key names that key.
    Walked with a stack of its own, so a deeply nested value cannot exhaust Python's.
    """
    pending: list[tuple[Any, str]] = [(value, path)]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                return Unstorable(where, problem)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return Unstorable(where, NOT_FINITE_REFUSAL)
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


def storable_text(text: str) -> str:
    """``text`` with each NUL shown as ``NUL_SHOWN`` and each lone surrogate as
    ``SURROGATE_SHOWN``."""
    return _SURROGATE.sub(SURROGATE_SHOWN, text.replace(NUL, NUL_SHOWN))


def _text_problem(text: str) -> str | None:
    if NUL in text:
        return NUL_REFUSAL
    if _SURROGATE.search(text):
        return SURROGATE_REFUSAL
    return None


def _step(path: str, key: str) -> str:
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    # ensure_ascii: a key with a lone surrogate is named, not re-raised as unencodable.
    return f"{path}[{json.dumps(key)}]"

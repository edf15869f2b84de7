"""Reading a docs page sentence by sentence, for the tests that map each of its promises
to the test that fails when it breaks (docs/security.md, docs/sandbox.md).

A page's tests keep a table of (an excerpt of a promise sentence, ``path::function``)
and a tuple of sentences that hold a promise word but promise nothing of the code's
(pointers to tests, advice to the reader). :func:`check_listed` and :func:`check_named`
are the two checks every such page gets.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Words that make a sentence a promise.
PROMISE_WORDS = (
    "never",
    "only",
    "must",
    "cannot",
    "may not",
    "refused",
    "needs",
    "is recorded",
    "closes",
)


def prose_sentences(text: str) -> list[str]:
    """The page's sentences outside code blocks, tables and headings, one line each."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
            lines.append("")
        elif inside or line.lstrip().startswith(("|", "#")):
            lines.append("")
        else:
            lines.append(line)
    sentences = []
    for paragraph in re.split(r"\n\s*\n|\n- ", "\n".join(lines)):
        flat = " ".join(paragraph.split()).removeprefix("- ")
        sentences += [s for s in re.split(r"(?<=[.!?)])\s+(?=[A-Z*`(])", flat) if s]
    return sentences


def promises_of(text: str, words: Iterable[str] = PROMISE_WORDS) -> list[str]:
    """The sentences of ``text`` that hold one of ``words``."""
    chosen = tuple(words)
    return [s for s in prose_sentences(text) if any(w in s.lower() for w in chosen)]


def check_named(page: Path, excerpt: str, node: str, words: Iterable[str] = PROMISE_WORDS) -> None:
    """The test ``node`` names is a test function of its module, and ``excerpt`` is a
    promise sentence of ``page``."""
    path, _, function = node.partition("::")
    assert (ROOT / path).is_file(), path
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    assert function.startswith("test_")
    assert callable(getattr(module, function, None)), node
    assert any(excerpt in sentence for sentence in promises_of(page.read_text(), words)), excerpt


def unlisted(page: Path, listed: Iterable[str], words: Iterable[str] = PROMISE_WORDS) -> list[str]:
    """The promise sentences of ``page`` that no excerpt of ``listed`` is part of."""
    excerpts = list(listed)
    return [s for s in promises_of(page.read_text(), words) if not any(e in s for e in excerpts)]

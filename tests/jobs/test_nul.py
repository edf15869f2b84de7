"""Where a NUL character hides in a value, and how stored text shows one. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from django_weft.jobs.nul import NUL_SHOWN, escape_nul, where_nul
from django_weft.jobs.output import OutputBuffer
from tests.jobs import NUL


@pytest.mark.parametrize(
    ("value", "root", "where"),
    [
        (f"a{NUL}", "result", "result"),
        ({"note": NUL}, "", "note"),
        ({"items": [0, 1, {"name": NUL}]}, "args", "args.items[2].name"),
        ({"a b": [(1, NUL)]}, "result", 'result["a b"][0][1]'),
        ({f"k{NUL}": 1}, "data", 'data["k\\u0000"]'),
        ({"first": [NUL], f"second{NUL}": 0}, "", "first[0]"),
        ({"first": 0, f"second{NUL}": NUL}, "", '["second\\u0000"]'),
    ],
    ids=["string", "top-level", "nested", "not-a-name", "in-a-key", "first-wins", "key-first"],
)
def test_where_nul_names_the_first_path(value: Any, root: str, where: str) -> None:
    """The path of the first NUL in document order, a key before what it holds."""
    assert where_nul(value, root) == where


def test_where_nul_none_without_one() -> None:
    """A value without a NUL, numbers, None and booleans included, has no path."""
    assert where_nul({"a": [1, 2.5, None, True, "text", {"b": "\\u0000"}]}) is None


def test_where_nul_walks_deep_values_without_recursing() -> None:
    """A value nested far deeper than Python's recursion limit is walked to its end."""
    value: Any = NUL
    for _ in range(100_000):
        value = [value]
    where = where_nul(value, "answer")
    assert where == "answer" + "[0]" * 100_000


def test_escape_nul_shows_each_as_the_symbol_for_null() -> None:
    """Each NUL becomes "␀"; the rest of the text is left as it is."""
    assert escape_nul(f"{NUL}a{NUL}{NUL}b") == f"{NUL_SHOWN}a{NUL_SHOWN}{NUL_SHOWN}b"


def test_output_buffer_keeps_a_nul_as_the_symbol_for_null() -> None:
    """An output buffer stores "␀" for a NUL and counts the three bytes it takes."""
    out = OutputBuffer(max_bytes=1024, max_lines=10)
    out.write(f"a{NUL}\n")
    assert (out.text, out.total_bytes) == (f"a{NUL_SHOWN}\n", 5)

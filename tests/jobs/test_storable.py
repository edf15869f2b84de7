"""Where an unstorable character or number hides in a value, and how stored text shows
one. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from django_weft.jobs.output import OutputBuffer
from django_weft.jobs.storable import (
    NOT_FINITE_REFUSAL,
    NUL_REFUSAL,
    NUL_SHOWN,
    SURROGATE_REFUSAL,
    SURROGATE_SHOWN,
    Unstorable,
    find_unstorable,
    storable_text,
)
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
def test_find_unstorable_names_the_first_nul(value: Any, root: str, where: str) -> None:
    """The path of the first NUL in document order, a key before what it holds."""
    assert find_unstorable(value, root) == Unstorable(where, NUL_REFUSAL)


def test_find_unstorable_none_in_storable_json() -> None:
    """A storable value, numbers, None, booleans and escapes as text included, has none."""
    assert find_unstorable({"a": [1, 2.5, None, True, "text", {"b": "\\u0000"}]}) is None


def test_find_unstorable_walks_deep_values_without_recursing() -> None:
    """A value nested far deeper than Python's recursion limit is walked to its end."""
    value: Any = NUL
    for _ in range(100_000):
        value = [value]
    assert find_unstorable(value, "answer") == Unstorable("answer" + "[0]" * 100_000, NUL_REFUSAL)


@pytest.mark.parametrize(
    ("value", "where", "problem"),
    [
        ({"note": "a\ud800b"}, "note", SURROGATE_REFUSAL),
        ({"\udfff": 1}, '["\\udfff"]', SURROGATE_REFUSAL),
        ({"ratio": float("nan")}, "ratio", NOT_FINITE_REFUSAL),
        ([1, float("-inf")], "[1]", NOT_FINITE_REFUSAL),
    ],
    ids=["lone-surrogate", "surrogate-key", "nan", "infinity"],
)
def test_find_unstorable_names_surrogates_and_non_finite_numbers(
    value: Any, where: str, problem: str
) -> None:
    """PostgreSQL refuses a lone surrogate, NaN and the infinities as it does a NUL."""
    assert find_unstorable(value) == Unstorable(where, problem)


def test_storable_text_shows_nul_and_lone_surrogates() -> None:
    """Each NUL becomes "␀", each lone surrogate U+FFFD; the rest is left as it is."""
    assert storable_text(f"{NUL}a{NUL}{NUL}b") == f"{NUL_SHOWN}a{NUL_SHOWN}{NUL_SHOWN}b"
    assert storable_text("x\ud83dy") == f"x{SURROGATE_SHOWN}y"
    assert storable_text("\U0001f600") == "\U0001f600"


def test_output_buffer_keeps_a_nul_as_the_symbol_for_null() -> None:
    """An output buffer stores "␀" for a NUL and counts the three bytes it takes."""
    out = OutputBuffer(max_bytes=1024, max_lines=10)
    out.write(f"a{NUL}\n")
    assert (out.text, out.total_bytes) == (f"a{NUL_SHOWN}\n", 5)

"""A failed stored module's traceback shows the module's own frames (issue 21): its stored
name as the file name, each line's number, function and text, after the package's frames.
The rendering is checked apart with what a compromised child might send."""

from __future__ import annotations

import pytest

from django_weft.sandbox.module_frames import MAX_FRAMES, frames_from_child, module_traceback
from django_weft.testing import Rehearsal
from tests.sandbox_helpers import assert_failed, limits, run_module  # noqa: F401

pytestmark = pytest.mark.slow

SOURCE = (
    "def parse(text):\n"
    "    return int(text)\n"
    "\n"
    "def default():\n"
    "    total = 0\n"
    "    total += parse('seven')\n"
    "    return total\n"
)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_failed_module_run_traceback_shows_the_modules_lines(rehearsal: Rehearsal) -> None:
    run = run_module(rehearsal, SOURCE, name="reports/daily")
    assert_failed(run, "ModuleRaised", "ValueError: invalid literal", "(line 2)")
    traceback = run.error_traceback
    expected = (
        'Traceback of stored module "reports/daily" (most recent call last):\n'
        '  File "reports/daily", line 6, in default\n'
        "    total += parse('seven')\n"
        '  File "reports/daily", line 2, in parse\n'
        "    return int(text)\n"
    )
    assert expected in traceback, traceback
    # The package's own frames are still there, above the module's.
    assert traceback.index("django_weft") < traceback.index("reports/daily")


def test_frames_from_a_child_are_checked_against_the_source() -> None:
    """Lines outside the source, names that are not names and odd shapes are left out."""
    sent = [[2, "parse"], [0, "x"], [99, "x"], ["2", "x"], [True, "x"], [3, "os.system()"], 5]
    assert frames_from_child(sent, line_count=3) == [(2, "parse")]
    assert frames_from_child({"line": 1}, line_count=3) == []
    assert frames_from_child([[1, "<lambda>"]], line_count=1) == [(1, "<lambda>")]


def test_frames_from_a_child_are_bounded_to_the_innermost() -> None:
    sent = [[1, f"f{number}"] for number in range(MAX_FRAMES * 3)]
    kept = frames_from_child(sent, line_count=1)
    assert len(kept) == MAX_FRAMES
    assert kept[-1] == (1, f"f{MAX_FRAMES * 3 - 1}")


def test_line_text_comes_from_the_hosts_source() -> None:
    """The text shown is the host's copy of the line, stripped; a blank line shows none."""
    text = module_traceback("m", "x = 1\n\n    boom()\n", [(3, "<module>"), (2, "<module>")])
    assert text.splitlines() == [
        'Traceback of stored module "m" (most recent call last):',
        '  File "m", line 3, in <module>',
        "    boom()",
        '  File "m", line 2, in <module>',
    ]
    assert module_traceback("m", "x = 1\n", []) == ""

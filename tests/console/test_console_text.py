"""The console's text: the terminal's renderer (ANSI colours to classes, the rest escaped
or dropped) and the words of durations."""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_weft.console.ansi import to_html
from django_weft.console.formatting import duration

#: Output as programs write it; the browser test renders each with the page's script too.
SAMPLES = [
    "plain\nlines\n",
    "\x1b[31mred\x1b[0m back",
    "\x1b[1;32mbold green\x1b[22m green\x1b[39m plain",
    "\x1b[4;3;2mall\x1b[23;24m dim\x1b[0m",
    "\x1b[91;104mbright\x1b[49m\x1b[97m white",
    "\x1b[38;5;3m256 yellow\x1b[38;5;200m kept\x1b[38;2;1;2;3m rgb\x1b[0m",
    "\x1b[48;5;9mbg\x1b[m reset by m",
    "<script>alert('x') & \"quotes\"</script>",
    "10%\r50%\r100% done\nnext\r\n",
    "bell\x07 and \x1b]0;title\x07 and \x1b[2K\x1b[1Acursor",
    "tab\there \x1b[",
    "\x1b[31mred\nstill red\x1b[0m\n",
    "",
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain\nlines\n", "plain\nlines\n"),
        ("\x1b[31mred\x1b[0m back", '<span class="weft-fg-1">red</span> back'),
        (
            "\x1b[1;32mbold green\x1b[22m green\x1b[39m plain",
            '<span class="weft-fg-2 weft-bold">bold green</span>'
            '<span class="weft-fg-2"> green</span> plain',
        ),
        ("\x1b[91;104mhi", '<span class="weft-fg-9 weft-bg-12">hi</span>'),
        ("\x1b[38;5;3my\x1b[38;5;200mz", '<span class="weft-fg-3">yz</span>'),
        ("<b>&'\"", "&lt;b&gt;&amp;&#x27;&quot;"),
        ("10%\r50%\r100% done\nnext\r\n", "100% done\nnext\n"),
        ("bell\x07 \x1b[2K\x1b[1Aok \x1b", "bell ok "),
        (
            "\x1b[31mred\nstill\x1b[0m\n",
            '<span class="weft-fg-1">red</span>\n<span class="weft-fg-1">still</span>\n',
        ),
    ],
)
def test_console_ansi_to_html(text: str, expected: str) -> None:
    """Colours become classes; carriage returns start the line again; controls go."""
    assert to_html(text) == expected


def test_console_ansi_every_sample_is_escaped() -> None:
    """Whatever the output holds, no tag but the renderer's own spans reaches the page."""
    for sample in SAMPLES:
        rendered = to_html(sample).replace('<span class="', "").replace("</span>", "")
        assert "<" not in rendered.replace('">', "")


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0.4213, "0.42 s"),
        (12.34, "12.3 s"),
        (185, "3 min 05 s"),
        (7380, "2 h 03 min"),
        (90000, "1 d 01 h"),
    ],
)
def test_console_duration_words(seconds: float, words: str) -> None:
    assert duration(timedelta(seconds=seconds)) == words

"""The console's text: the terminal's renderer (ANSI colours to classes, the rest escaped
or dropped) and the words of durations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from django_weft.console.ansi import to_html
from django_weft.console.formatting import duration, length_html, relative, relative_html

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
    # Hostile numbers: far past anything SGR means, or long only by their leading zeros.
    "before \x1b[" + "9" * 5000 + "mafter",
    "\x1b[1;" + "4" * 5000 + ";31mbold red\x1b[38;5;" + "0" * 5000 + "3m yellow",
    "\x1b[38;" + "5" * 40 + ";2m \x1b[38;5;" + "1" * 20 + "m \x1b[256;016;0031mz",
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


def test_console_ansi_bounds_every_number_it_reads() -> None:
    """``ESC[``, 5,000 digits and ``m`` is an unknown code: dropped, the text around it kept,
    the style untouched; leading zeros do not make a number long (Python refuses to convert
    an int of more than 4,300 digits, which would fail the run page)."""
    digits = "9" * 5000
    assert to_html(f"before \x1b[{digits}mafter") == "before after"
    assert to_html(f"\x1b[31mred\x1b[{digits}m still") == '<span class="weft-fg-1">red still</span>'
    assert to_html(f"\x1b[1;{digits};32mx") == '<span class="weft-fg-2 weft-bold">x</span>'
    assert to_html("\x1b[38;5;" + "0" * 5000 + "3my") == '<span class="weft-fg-3">y</span>'
    assert to_html(f"\x1b[38;5;{digits}mz") == "z"
    assert to_html(f"\x1b[38;{digits};31mw") == '<span class="weft-fg-1">w</span>', "kind skipped"
    assert to_html("\x1b[" + ";" * 5000 + "1mv") == '<span class="weft-bold">v</span>'


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


def test_console_length_ticks_only_while_running() -> None:
    """A running run's length carries the seconds it had run by the server's clock, for
    the page's script to move on; a finished run's, and one not started, are words."""
    now = datetime(2026, 3, 8, 12, tzinfo=UTC)
    started = now - timedelta(seconds=55.25)
    assert length_html(started, None, now) == (
        '<span class="weft-ticking" data-weft-elapsed="55.250">55.2 s</span>'
    )
    assert length_html(started, now - timedelta(seconds=5), now) == "50.2 s"
    assert length_html(None, None, now) == "-"


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0.4, "now"),
        (-0.9, "now"),
        (42.7, "in 42 s"),
        (-42.7, "42 s ago"),
        (2520, "in 42 min 00 s"),
        (-185, "3 min 05 s ago"),
        (7380, "in 2 h 03 min"),
    ],
)
def test_console_relative_words(seconds: float, words: str) -> None:
    assert relative(seconds) == words


def test_console_relative_html_ticks_from_the_servers_offset() -> None:
    now = datetime(2026, 3, 8, 12, tzinfo=UTC)
    assert relative_html(now + timedelta(minutes=42), now) == (
        '<span class="weft-relative" data-weft-offset="2520.000">in 42 min 00 s</span>'
    )
    assert relative_html(None, now) == ""

"""A run's output as a terminal shows it: ANSI colours to HTML, everything else escaped.

Pure: text in, HTML out. The page's script (``static/django_weft/console.js``,
``weftAnsi``) applies the same rules to live output, so the first paint and every later
update read the same; a browser test holds the two to each other.

The rules: SGR sequences (``ESC [ ... m``) set the 16 colours, foreground and background,
bold, dim, italic and underline, as ``weft-*`` classes (no inline styles, so a page's
Content-Security-Policy need not allow them); 256-colour and true-colour values pick one
of the 16 when they are one of them and are dropped otherwise. A carriage return starts
its line again, as a progress bar expects. Every other escape sequence and control
character is removed; text is HTML-escaped.

Output is whatever a job printed, so every number is bounded before it is read: no SGR
parameter means anything past 255, and one of more than :data:`LONGEST_PARAMETER` digits
(leading zeros aside) is an unknown code, ignored as any unknown code is, and never
converted (``ESC[``, 5,000 digits and ``m`` would otherwise pass Python's limit on the
digits of an ``int`` and fail the page).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, replace

#: An escape sequence (CSI with its parameters, or a two-character escape), or a
#: control character other than newline, tab and carriage return.
_TOKEN = re.compile(
    r"\x1b\[([0-?]*)[ -/]*[@-~]|\x1b[@-Z\\-_]|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r|\n"
)
_CSI_SGR = re.compile(r"\x1b\[([0-9;]*)m")


@dataclass(frozen=True)
class Style:
    """The SGR state: colour numbers 0-15 (None for the terminal's own) and attributes."""

    fg: int | None = None
    bg: int | None = None
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False

    def classes(self) -> str:
        names = []
        if self.fg is not None:
            names.append(f"weft-fg-{self.fg}")
        if self.bg is not None:
            names.append(f"weft-bg-{self.bg}")
        for attribute in ("bold", "dim", "italic", "underline"):
            if getattr(self, attribute):
                names.append(f"weft-{attribute}")
        return " ".join(names)


PLAIN = Style()

#: The most digits of an SGR parameter that are read; nothing in SGR goes past 255.
LONGEST_PARAMETER = 3
#: What a longer parameter reads as: a code no rule knows.
UNKNOWN_CODE = 10**LONGEST_PARAMETER


def parameter(text: str) -> int:
    """One SGR parameter's number: ``""`` is 0, a too-long one :data:`UNKNOWN_CODE`."""
    digits = text.lstrip("0")
    return int(digits or "0") if len(digits) <= LONGEST_PARAMETER else UNKNOWN_CODE


def apply_sgr(style: Style, parameters: str) -> Style:
    """``style`` after the SGR sequence with ``parameters`` (``"1;31"``; ``""`` resets)."""
    codes = [parameter(code) for code in parameters.split(";")]
    index = 0
    while index < len(codes):
        code = codes[index]
        index += 1
        if code == 0:
            style = PLAIN
        elif code in (1, 2, 3, 4):
            style = replace(style, **{("bold", "dim", "italic", "underline")[code - 1]: True})
        elif code == 22:
            style = replace(style, bold=False, dim=False)
        elif code == 23:
            style = replace(style, italic=False)
        elif code == 24:
            style = replace(style, underline=False)
        elif 30 <= code <= 37 or 90 <= code <= 97:
            style = replace(style, fg=code - 30 if code < 90 else code - 82)
        elif 40 <= code <= 47 or 100 <= code <= 107:
            style = replace(style, bg=code - 40 if code < 100 else code - 92)
        elif code == 39:
            style = replace(style, fg=None)
        elif code == 49:
            style = replace(style, bg=None)
        elif code in (38, 48):
            kind = codes[index] if index < len(codes) else None
            if kind == 5:
                value = codes[index + 1] if index + 1 < len(codes) else None
                index += 2
                if value is not None and value < 16 and code == 38:
                    style = replace(style, fg=value)
                elif value is not None and value < 16:
                    style = replace(style, bg=value)
            elif kind == 2:
                index += 4  # r;g;b: not one of the 16, dropped
            else:
                index += 1
    return style


def to_html(text: str) -> str:
    """``text`` with its ANSI colours as ``<span class="weft-...">``, everything escaped."""
    lines: list[str] = []
    line: list[tuple[str, str]] = []  # (classes, text) of the current line
    style = PLAIN
    position = 0

    def add(chunk: str) -> None:
        if not chunk:
            return
        classes = style.classes()
        if line and line[-1][0] == classes:
            line[-1] = (classes, line[-1][1] + chunk)
        else:
            line.append((classes, chunk))

    for token in _TOKEN.finditer(text):
        add(text[position : token.start()])
        position = token.end()
        matched = token.group()
        if matched == "\n":
            lines.append(_render(line) + "\n")
            line = []
        elif matched == "\r":
            if text.startswith("\n", position):
                continue  # a CRLF line end
            line = []
        elif sgr := _CSI_SGR.fullmatch(matched):
            style = apply_sgr(style, sgr.group(1))
    add(text[position:])
    lines.append(_render(line))
    return "".join(lines)


def _render(line: list[tuple[str, str]]) -> str:
    return "".join(
        f'<span class="{classes}">{html.escape(chunk)}</span>' if classes else html.escape(chunk)
        for classes, chunk in line
    )

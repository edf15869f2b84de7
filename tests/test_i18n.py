"""What a user reads goes through Django's translation functions, so a project can
translate django-weft.

``makemessages`` (GNU gettext's xgettext, run on a copy of the package into a temporary
locale folder) must find known strings from each place users read: the console's
templates and Python, the service layer's refusals, and the API's errors. And no
template holds words outside ``{% translate %}`` / ``{% blocktranslate %}``: only
symbols, numbers and what the template renders from its context. System check messages
are for the developer who deploys and stay in English (docs/design-decisions.md).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "django_weft"
TEMPLATES = sorted((PACKAGE / "templates").rglob("*.html"))

#: Strings the catalogue must hold, by where they come from.
KNOWN = {
    "templates": [
        "Runs now",
        "No run failed in the last 24 hours.",
        "Approve revision %(revision)s",
        "Traceback",
        "%(age)s ago",
    ],
    "console": [
        "Abort selected runs",
        "Abort requested for run %(run)s: it stops at its next sleep() or check().",
        "Run now",
        "Disabled %(count)d schedule.",
    ],
    "operations": [
        "you may not %(verb)s (needs %(permission)s)",
        "start runs",
        "you must be signed in",
        "change what schedule %(name)s runs",
    ],
    "api": [
        "The database is unavailable; try again in a few seconds.",
        "A schedule with this name was just created; choose another name.",
        "JSON parse error - %(error)s",
    ],
}


def catalogue(po: str) -> set[str]:
    """The msgids (and plural msgids) of a .po file, their continued lines joined."""
    ids: set[str] = set()
    for entry in re.findall(r'^msgid(?:_plural)? ((?:".*"\n)+)', po, re.M):
        ids.add("".join(re.findall(r'^"(.*)"$', entry, re.M)).replace('\\"', '"'))
    return ids


@pytest.fixture(scope="module")
def messages(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """``django-admin makemessages -l xx`` over a copy of the package."""
    copy = tmp_path_factory.mktemp("i18n") / "django_weft"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "locale"))
    (copy / "locale").mkdir()
    subprocess.run(
        [sys.executable, "-m", "django", "makemessages", "-l", "xx", "--no-location"],
        cwd=copy,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        check=True,
        capture_output=True,
        timeout=240,
    )
    return catalogue((copy / "locale" / "xx" / "LC_MESSAGES" / "django.po").read_text())


@pytest.mark.parametrize("place", sorted(KNOWN))
def test_i18n_makemessages_finds_the_strings_of(place: str, messages: set[str]) -> None:
    """The catalogue holds each known string of ``place``."""
    missing = [text for text in KNOWN[place] if text not in messages]
    assert not missing, missing


#: What a template may hold outside translation tags: its tags' names and attributes,
#: what it renders from its context, entities, symbols and numbers.
_NOT_TEXT = [
    re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.S),
    re.compile(r"{%\s*blocktranslate\b.*?{%\s*endblocktranslate\s*%}", re.S),
    re.compile(r"{#.*?#}", re.S),
    re.compile(r"<(script|style)\b.*?</\1>", re.S),
    re.compile(r"{%\s*block bodyclass\s*%}.*?{%\s*endblock\s*%}", re.S),  # CSS classes
]
_TAG_OR_VALUE = re.compile(r"{%.*?%}|{{.*?}}", re.S)
#: The attributes whose values a user reads.
_READ_ATTRIBUTE = re.compile(r'\b(?:title|placeholder|alt|aria-label)="([^"]*)"')
_HTML_TAG = re.compile(r"<[^>]*>", re.S)
_ENTITY = re.compile(r"&#?\w+;")


def bare_words(template: str) -> list[str]:
    """The words of ``template`` that no translation tag wraps."""
    text = template
    for pattern in _NOT_TEXT:
        text = pattern.sub(" ", text)
    text = _TAG_OR_VALUE.sub(" ", text)
    read = " ".join(_READ_ATTRIBUTE.findall(text))
    text = _ENTITY.sub(" ", _HTML_TAG.sub(" ", text) + " " + read)
    return re.findall(r"[^\W\d_][\w'-]*", text)


def test_i18n_bare_words_are_found() -> None:
    """The check sees words in text and in read attributes, and nothing else."""
    template = (
        '{% load i18n %}<p class="x" title="Since then">Hello {{ name }}</p>'
        '{% translate "Fine" %}{% blocktranslate %}Also {{ n }}{% endblocktranslate %} 3 &middot; -'
    )
    assert bare_words(template) == ["Hello", "Since", "then"]


@pytest.mark.parametrize("path", TEMPLATES, ids=[str(p.relative_to(PACKAGE)) for p in TEMPLATES])
def test_i18n_template_has_no_bare_text(path: Path) -> None:
    """Every word a user reads in the template is inside a translation tag."""
    assert not bare_words(path.read_text(encoding="utf-8"))

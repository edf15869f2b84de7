"""The API's JSON parser: DRF's, with a bound on how deeply a body may nest.

Python's JSON decoder recurses once for each array or object it opens, so a body such as
100,000 ``[`` fails with ``RecursionError``, which DRF does not catch: a 500. Nothing the
API takes nests deeply, so a body deeper than :data:`MAX_JSON_DEPTH` is refused with a
400 naming the limit, before it is decoded.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from itertools import accumulate
from typing import IO, Any

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

#: The most arrays and objects a JSON body may nest, one inside the other.
MAX_JSON_DEPTH = 64

#: A string, to its closing quote or to the end of an unterminated one (so no text is
#: read twice); possessive, so nothing backtracks.
_STRING = re.compile(r'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nests_deeper(text: str, limit: int) -> bool:
    """Whether JSON ``text`` opens more than ``limit`` arrays or objects one inside another.

    Brackets inside strings do not count. Linear, each pass in C: the strings go, then
    everything but brackets, then the depth after each bracket (a running sum of +1 for
    an opening one, -1 for a closing one) is compared with ``limit``. A text that opens
    no more than ``limit`` brackets in all is not read further.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


class BoundedJSONParser(JSONParser):
    """DRF's :class:`~rest_framework.parsers.JSONParser`, refusing bodies that nest deeper
    than :data:`MAX_JSON_DEPTH` with a 400 that names the limit."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        body: bytes = stream.read()
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = body.decode(encoding)
        except (LookupError, UnicodeDecodeError) as error:
            raise ParseError(_("JSON parse error - %(error)s") % {"error": error}) from None
        if nests_deeper(text, MAX_JSON_DEPTH):
            raise ParseError(
                _(
                    "JSON parse error - the body nests arrays and objects more than"
                    " %(depth)d levels deep"
                )
                % {"depth": MAX_JSON_DEPTH}
            )
        return super().parse(io.BytesIO(body), media_type, parser_context)

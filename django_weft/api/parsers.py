"""The API's bounds on a request's body: how large it may be, and how deeply it may nest.

A body larger than Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is refused with a JSON 413
(:class:`BodyTooLarge`) before any of it is read when its ``Content-Length`` says so
(:func:`refuse_oversize`), and after at most the limit plus one byte otherwise: Django's
own refusal (``RequestDataTooBig``) would be its HTML 400 page and an ERROR with a
traceback in the log.

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
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

#: The most arrays and objects a JSON body may nest, one inside the other.
MAX_JSON_DEPTH = 64

#: A string, to its closing quote or to the end of an unterminated one (so no text is
#: read twice); possessive, so nothing backtracks.
_STRING = re.compile(r'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class BodyTooLarge(APIException):
    """413: the body is larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes; nothing was read
    past the limit, and nothing was done."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = gettext_lazy("The request body is too large.")
    default_code = "too_large"

    def __init__(self, limit: int) -> None:
        # The body carries ``code`` next to ``detail``, as the API's 409s and 503s do.
        detail = _(
            "The request body is larger than %(limit)d bytes, the most this API accepts "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE)."
        ) % {"limit": limit}
        super().__init__({"detail": detail, "code": self.default_code})


def body_limit() -> int | None:
    """The most bytes a body may have (``DATA_UPLOAD_MAX_MEMORY_SIZE``); None: no limit."""
    limit: int | None = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return limit


def refuse_oversize(request: HttpRequest) -> None:
    """Raise :class:`BodyTooLarge` for a request whose ``Content-Length`` is over the
    limit, before anything reads its body (DRF's parsers, a CSRF check of a form)."""
    limit = body_limit()
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return  # no length to go by: the body is bounded as it is read
    if limit is not None and length > limit:
        raise BodyTooLarge(limit)


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
    than :data:`MAX_JSON_DEPTH` with a 400 that names the limit, and bodies larger than
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` with a 413, having read at most one byte more."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        limit = body_limit()
        body: bytes = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(body) > limit:
            raise BodyTooLarge(limit)
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

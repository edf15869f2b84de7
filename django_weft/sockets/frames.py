"""The frames a client sends: read, checked, and refused with an ``error`` frame's words.

Frames are JSON objects with a ``type`` (see docs/live.md). :func:`parse` reads the text,
:func:`read` checks the frame's fields for its type. A start's fields are checked later,
in the database thread (:func:`django_weft.sockets.actions.start`), by the one start
validator (:func:`django_weft.operations.parse_start`, the API's as well), with the
frame's ``request_id`` as its idempotency key: it asks first whether the user may start
runs at all. Whatever is refused raises :class:`FrameError`, which the socket sends back
as an ``error`` frame.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ValidationError
from rest_framework import serializers

from django_weft import operations
from django_weft.conf import weft_settings
from django_weft.exceptions import WeftError
from django_weft.jobs.registry import flatten_errors

#: How deeply a frame's objects and arrays may nest, the frame itself being level 1:
#: ample for any job's args, and far from what would exhaust the stack of the code
#: that reads them (validators, serializers, the database's JSON).
MAX_DEPTH = 32


class FrameError(Exception):
    """A request the socket refuses: becomes an ``error`` frame."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


class AbortFrame(serializers.Serializer[Any]):
    run = serializers.UUIDField()
    request_id = serializers.CharField(max_length=operations.REQUEST_ID_LENGTH, required=False)


class SignalFrame(serializers.Serializer[Any]):
    """A signal to the run ``run`` (see :func:`django_weft.operations.send_signal_for`)."""

    run = serializers.UUIDField()
    name = serializers.CharField(max_length=100, trim_whitespace=False)
    payload = serializers.JSONField(required=False, allow_null=True, default=None)
    request_id = serializers.CharField(max_length=operations.REQUEST_ID_LENGTH, required=False)


class SubscribeFrame(serializers.Serializer[Any]):
    documents = serializers.ListField(
        child=serializers.CharField(max_length=255), allow_empty=False, max_length=50
    )


class PageFrame(serializers.Serializer[Any]):
    """The next page of unfinished runs, after the run ``after`` (a snapshot's ``next``)."""

    after = serializers.UUIDField()
    request_id = serializers.CharField(max_length=operations.REQUEST_ID_LENGTH, required=False)


def parse(text_data: str | None, bytes_data: bytes | None) -> dict[str, Any]:
    """The frame a client sent, as a dict; :class:`FrameError` for anything else."""
    if text_data is None:
        raise FrameError("malformed", "binary frames are not accepted; send JSON text")
    if len(text_data) > weft_settings.LIVE_MAX_FRAME:
        raise FrameError(
            "too_large",
            f"frame of {len(text_data)} characters is over the limit of "
            f"{weft_settings.LIVE_MAX_FRAME}",
        )
    try:
        frame = json.loads(text_data)
    except json.JSONDecodeError as error:
        raise FrameError("malformed", f"malformed JSON: {error}") from None
    except RecursionError:
        # Far deeper than the limit: the parser gave up before we could measure.
        raise too_deep() from None
    if not isinstance(frame, dict):
        raise FrameError("malformed", f"a frame must be a JSON object, not {type(frame).__name__}")
    if nested_deeper_than(frame, MAX_DEPTH):
        raise too_deep()
    return frame


def too_deep() -> FrameError:
    return FrameError(
        "malformed", f"JSON nested too deeply: objects and arrays nest at most {MAX_DEPTH} levels"
    )


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value``'s objects and arrays nest more than ``limit`` levels (no recursion)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level > limit:
            return True
        pending.extend((child, level + 1) for child in children)
    return False


def request_id(frame: dict[str, Any]) -> str | None:
    """The frame's ``request_id``, which the answer repeats, if it is text."""
    given = frame.get("request_id")
    return given if isinstance(given, str) else None


def read(frame: dict[str, Any]) -> tuple[str, Any]:
    """The frame's type and its checked fields (a start's as sent: see :func:`_start`)."""
    kind = frame.get("type")
    if not isinstance(kind, str) or kind not in READERS:
        known = ", ".join(sorted(READERS))
        raise FrameError("unknown_type", f"unknown frame type {kind!r}; expected one of: {known}")
    return kind, READERS[kind]({name: value for name, value in frame.items() if name != "type"})


def _start(fields: dict[str, Any]) -> dict[str, Any]:
    """A start's fields as sent: read by :func:`django_weft.operations.parse_start` in the
    database thread, once the user was found to be allowed to start runs."""
    return fields


def _checked_by(
    kind: str, serializer: type[serializers.Serializer[Any]]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def check(fields: dict[str, Any]) -> dict[str, Any]:
        checked = serializer(data=fields)
        if not checked.is_valid():
            raise FrameError(
                "invalid", f"invalid {kind} frame", fields=flatten_errors(checked.errors)
            )
        return dict(checked.validated_data)

    return check


#: How each type of frame is checked, by type.
READERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "start": _start,
    "abort": _checked_by("abort", AbortFrame),
    "signal": _checked_by("signal", SignalFrame),
    "subscribe": _checked_by("subscribe", SubscribeFrame),
    "page": _checked_by("page", PageFrame),
}


def refusal(error: WeftError | ValidationError) -> FrameError:
    """What the service layer refused, as an ``error`` frame's code, message and fields."""
    code, message, fields = operations.describe_refusal(error)
    return FrameError(code, message, **({"fields": fields} if fields else {}))


@contextmanager
def refusals() -> Iterator[None]:
    """Turn what the service layer refuses into a :class:`FrameError`."""
    try:
        yield
    except operations.REFUSALS as error:
        raise refusal(error) from None

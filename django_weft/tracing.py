"""OpenTelemetry spans around a run's start, its execution and its finish, when the
OpenTelemetry API is installed; nothing at all when it is not.

``opentelemetry-api`` is an optional dependency: a project that installs it (and an SDK
with an exporter) sees ``weft.start``, ``weft.run`` and ``weft.finish`` spans from the
tracer named ``django_weft``. Without an SDK the API's tracer is a no-op, and without the
API :func:`span` is a ``nullcontext``: weft never configures a tracer provider itself,
as OpenTelemetry asks of libraries.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from django_weft import __version__

#: What an attribute of a span may hold (OpenTelemetry's ``AttributeValue``, scalars).
Attribute = str | int | float | bool


class Span(Protocol):
    """The part of a span weft uses: attributes learnt once the work is under way."""

    def set_attribute(self, key: str, value: Attribute) -> None: ...


class _NoSpan:
    """The span of a process without OpenTelemetry: remembers nothing."""

    def set_attribute(self, key: str, value: Attribute) -> None:
        """Drop the attribute: no tracer would read it."""


@functools.cache
def tracer() -> Any:
    """The ``django_weft`` tracer of the OpenTelemetry API, or None without the API.

    Cached: the API's tracer is a proxy that follows whatever provider the project sets
    later, so it is asked for once.
    """
    try:
        trace = importlib.import_module("opentelemetry.trace")
    except ImportError:
        return None
    return trace.get_tracer("django_weft", __version__)


@contextlib.contextmanager
def span(name: str, attributes: Mapping[str, Attribute] | None = None) -> Iterator[Span]:
    """A span called ``name`` around the block, the current one inside it.

    An exception that leaves the block is recorded on the span, which ends with an error
    status, and goes on up unchanged.
    """
    current = tracer()
    if current is None:
        yield _NoSpan()
        return
    with current.start_as_current_span(name, attributes=dict(attributes or {})) as started:
        yield started

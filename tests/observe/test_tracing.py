"""OpenTelemetry spans around a run's start, its execution and its finish, read through
the SDK's in-memory exporter; and nothing at all without the API."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import timedelta

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from django_weft import tracing
from django_weft.operations import start
from django_weft.testing import Rehearsal


def test_spans_around_start_run_and_finish(
    rehearsal: Rehearsal, spans: InMemorySpanExporter
) -> None:
    """A run that is done: ``weft.start``, ``weft.run`` and ``weft.finish``, each naming
    the run, the run's span its attempt and status."""
    run = start("tests.noop")
    rehearsal.advance(timedelta(seconds=1))
    ended = {span.name: span for span in spans.get_finished_spans()}
    assert {"weft.start", "weft.run", "weft.finish"} <= set(ended)
    assert dict(ended["weft.start"].attributes or {}) == {
        "weft.job": "tests.noop",
        "weft.run_id": str(run.pk),
    }
    assert dict(ended["weft.run"].attributes or {}) == {
        "weft.job": "tests.noop",
        "weft.run_id": str(run.pk),
        "weft.attempt": 1,
        "weft.status": "done",
    }
    assert (ended["weft.finish"].attributes or {})["weft.runs"] == 1


def test_run_span_of_a_failing_run(rehearsal: Rehearsal, spans: InMemorySpanExporter) -> None:
    """The job's exception is the run's outcome, not the span's error: the span ends with
    the run's status ``failed``."""
    run = start("tests.broken")
    rehearsal.advance(timedelta(seconds=1))
    (executed,) = [span for span in spans.get_finished_spans() if span.name == "weft.run"]
    assert (executed.attributes or {})["weft.run_id"] == str(run.pk)
    assert (executed.attributes or {})["weft.status"] == "failed"


def test_span_records_an_exception_leaving_it(spans: InMemorySpanExporter) -> None:
    """What raises out of a span is recorded on it, which ends in error, and goes on up."""
    with pytest.raises(ValueError, match="bad"), tracing.span("weft.start", {"weft.job": "x"}):
        raise ValueError("bad")
    (ended,) = spans.get_finished_spans()
    assert ended.status.status_code is StatusCode.ERROR
    assert [event.name for event in ended.events] == ["exception"]


@pytest.fixture
def without_opentelemetry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process as one without ``opentelemetry-api``: its modules do not import."""
    tracing.tracer.cache_clear()
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    yield
    tracing.tracer.cache_clear()


@pytest.mark.usefixtures("without_opentelemetry")
def test_span_without_opentelemetry_is_nothing() -> None:
    """Without the API there is no tracer, and a span takes attributes and drops them."""
    assert tracing.tracer() is None
    with tracing.span("weft.run", {"weft.job": "tests.noop"}) as span:
        span.set_attribute("weft.status", "done")

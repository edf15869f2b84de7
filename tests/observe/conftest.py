"""What the tests of the operators' endpoints share: scraping, and reading a scrape."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from django_weft.engine.worker.housekeeping import loop_pulse

METRICS = "/weft/metrics/"
READY = "/weft/health/ready/"
LIVE = "/weft/health/live/"

#: One sample: its name and its labels, sorted.
Key = tuple[str, tuple[tuple[str, str], ...]]


def samples(text: str) -> dict[Key, float]:
    """Every sample of a Prometheus text exposition, by name and labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict[Key, float], name: str, **labels: str) -> float:
    """One sample's value; 0 when the scrape has no such sample (a counter not counted yet)."""
    return scraped.get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(client: Client | None = None) -> dict[Key, float]:
    """The metrics as Prometheus reads them, with the tests' bearer token."""
    answer = (client or Client()).get(
        METRICS, headers={"authorization": f"Bearer {settings.WEFT_METRICS_TOKEN}"}
    )
    assert answer.status_code == 200, answer.content
    return samples(answer.content.decode())


@pytest.fixture(autouse=True)
def _no_loop_pulse_from_an_earlier_test() -> Iterator[None]:
    """Liveness reads this process's loop pulse: each test starts and ends without one."""
    loop_pulse.stop()
    yield
    loop_pulse.stop()


_EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="session")
def _tracer_provider() -> InMemorySpanExporter:
    """OpenTelemetry's SDK, set up once (a process may set its tracer provider once),
    recording every span in memory."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    trace.set_tracer_provider(provider)
    return _EXPORTER


@pytest.fixture
def spans(_tracer_provider: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    """The spans this test ended, in the order they ended."""
    _tracer_provider.clear()
    yield _tracer_provider
    _tracer_provider.clear()

"""Flow limits in the metrics: each limit's bounds and use, and the queued runs a limit
holds back (or that no deployed code can run) counted apart and left out of the queue's
oldest wait (so the queue-lag alert of docs/metrics.md does not fire for runs that wait
by design)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from django_weft.jobs.registry import registry
from django_weft.models import FlowLimit, Run, RunStatus
from django_weft.operations import start
from tests.observe.conftest import scrape, value

pytestmark = pytest.mark.django_db(transaction=True)


def test_limits_use_and_held_runs_are_gauges_of_their_own() -> None:
    now = timezone.now()
    FlowLimit.objects.create(name="noop", job="tests.noop", concurrency=1, updated_at=now)
    FlowLimit.objects.create(
        name="api", job="tests.noop", rate=5, period=timedelta(minutes=1), updated_at=now
    )
    runs = [start(registry.get("tests.noop")) for _ in range(3)]
    Run.objects.filter(pk=runs[0].pk).update(status=RunStatus.RUNNING, started_at=now)
    # The two still queued started an hour ago: held, they must not read as lag.
    Run.objects.filter(pk__in=[runs[1].pk, runs[2].pk]).update(created_at=now - timedelta(hours=1))
    scraped = scrape()
    assert value(scraped, "weft_limit_allowed", limit="noop", kind="concurrency") == 1
    assert value(scraped, "weft_limit_used", limit="noop", kind="concurrency") == 1
    assert value(scraped, "weft_limit_allowed", limit="api", kind="rate") == 5
    assert value(scraped, "weft_limit_used", limit="api", kind="rate") == 0
    assert value(scraped, "weft_queue_depth", queue="default") == 2
    assert value(scraped, "weft_queue_held_runs", queue="default") == 2
    assert value(scraped, "weft_queue_oldest_waiting_seconds", queue="default") == 0
    FlowLimit.objects.filter(name="noop").update(concurrency=2)
    scraped = scrape()
    assert value(scraped, "weft_queue_held_runs", queue="default") == 0
    assert value(scraped, "weft_queue_oldest_waiting_seconds", queue="default") >= 3600


def test_blocked_runs_are_a_gauge_of_their_own_and_no_lag() -> None:
    """A queued run of a version no code here defines waits for a deploy: counted in the
    depth and in ``weft_queue_blocked_runs``, not in the oldest wait, so the queue-lag
    alert does not fire for it."""
    now = timezone.now()
    blocked = start(registry.get("tests.noop"))
    Run.objects.filter(pk=blocked.pk).update(job_version=99, created_at=now - timedelta(hours=1))
    scraped = scrape()
    assert value(scraped, "weft_queue_depth", queue="default") == 1
    assert value(scraped, "weft_queue_blocked_runs", queue="default") == 1
    assert value(scraped, "weft_queue_oldest_waiting_seconds", queue="default") == 0
    Run.objects.filter(pk=blocked.pk).update(job_version=1)
    scraped = scrape()
    assert value(scraped, "weft_queue_blocked_runs", queue="default") == 0
    assert value(scraped, "weft_queue_oldest_waiting_seconds", queue="default") >= 3600

"""Publishing to a channel layer that is down: runs go on, one outage is logged once."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import override_settings

from django_weft.engine.worker import Worker
from django_weft.jobs.registry import registry
from django_weft.live.publisher import PUBLISH_TIMEOUT
from django_weft.models import Run, RunStatus
from django_weft.operations import start
from django_weft.testing import DrivenClock
from tests.faults.servers import RedisServer

pytestmark = pytest.mark.django_db(transaction=True)


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "django_weft.live" and r.levelno >= logging.INFO
    ]


def test_publishing_while_redis_is_down_never_fails_a_run(
    redis: RedisServer, clock: DrivenClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Starts and finishes commit while Redis is down; the outage is two log lines."""
    caplog.set_level(logging.INFO, logger="django_weft.live")
    noop = registry.get("tests.noop")
    worker = Worker(clock=clock, executor="django_weft.engine.executors.InlineExecutor")
    try:
        redis.stop()
        runs = [start(noop, {}) for _ in range(3)]
        worker.tick()  # claims, runs and finishes them, publishing every step
        assert {Run.objects.get(pk=run.pk).status for run in runs} == {RunStatus.DONE}

        redis.start()
        start(noop, {})
    finally:
        worker.close()

    lines = said(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith("publishing: the channel layer failed (ConnectionError")
    assert lines[1].startswith("publishing: the channel layer works again after")


@pytest.fixture
def silent_redis() -> Iterator[str]:
    """A port that accepts connections and never answers, like a Redis cut off mid-way."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


def test_publishing_to_a_silent_redis_gives_up_in_time(
    silent_redis: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis that never answers delays a start by PUBLISH_TIMEOUT at most, then it commits."""
    caplog.set_level(logging.INFO, logger="django_weft.live")
    noop = registry.get("tests.noop")
    layer = settings.CHANNEL_LAYERS["default"]
    silent = {"default": {**layer, "CONFIG": {**layer["CONFIG"], "hosts": [silent_redis]}}}
    with override_settings(CHANNEL_LAYERS=silent):
        began = time.monotonic()
        run = start(noop, {})
        took = time.monotonic() - began
    start(noop, {})  # on the real Redis again: the outage ends

    assert Run.objects.filter(pk=run.pk).exists()
    # It waited for the layer, then gave up: a start that never gave up would hang until
    # the suite's timeout fails the test. How much longer it took depends on the machine.
    assert took >= PUBLISH_TIMEOUT, took
    lines = said(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith("publishing: the channel layer failed (TimeoutError")

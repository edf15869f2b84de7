"""Publishing to a channel layer that is down: runs go on, one outage is logged once.

Publishing happens on the process's publishing thread: each test waits for it
(``flush_live``) before it reads the log.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from django_weft.engine.worker.loop import Worker
from django_weft.jobs.registry import registry
from django_weft.live import publisher
from django_weft.live.publisher import PUBLISH_TIMEOUT
from django_weft.models import Run, RunStatus
from django_weft.operations import start
from django_weft.testing import DrivenClock, flush_live
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
    worker = Worker(clock=clock, executor="django_weft.engine.worker.executors.InlineExecutor")
    try:
        redis.stop()
        runs = [start(noop, {}) for _ in range(3)]
        worker.tick()  # claims, runs and finishes them, publishing every step
        assert {Run.objects.get(pk=run.pk).status for run in runs} == {RunStatus.DONE}

        redis.start()
        start(noop, {})
    finally:
        worker.close()

    flush_live()
    lines = said(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith("publishing: the channel layer failed (ConnectionError")
    assert lines[1].startswith("publishing: the channel layer works again after")


@pytest.fixture
def silent_redis() -> Iterator[socket.socket]:
    """A port that accepts connections and never answers, like a Redis cut off mid-way.

    Connections wait in the listener's backlog; closing the listener resets them.
    """
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener


def on(listener: socket.socket) -> Any:
    """The test's channel layer, pointed at ``listener``."""
    layer = settings.CHANNEL_LAYERS["default"]
    url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    return override_settings(
        CHANNEL_LAYERS={"default": {**layer, "CONFIG": {**layer["CONFIG"], "hosts": [url]}}}
    )


def test_publishing_to_a_silent_redis_never_holds_up_a_start(
    silent_redis: socket.socket, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start commits and returns while its publication still waits for the silent Redis
    (for an hour here); that one fails once the Redis goes away, and nothing waits for it."""
    caplog.set_level(logging.INFO, logger="django_weft.live")
    monkeypatch.setattr(publisher, "PUBLISH_TIMEOUT", 3600.0)
    with on(silent_redis):
        run = start(registry.get("tests.noop"), {})
        assert Run.objects.filter(pk=run.pk).exists()
        assert not publisher.flush(0), "the start returned before its publication was sent"
        silent_redis.close()
        flush_live()

    lines = said(caplog)
    assert len(lines) == 1, lines
    assert lines[0].startswith("publishing: the channel layer failed")


def test_publishing_to_a_silent_redis_gives_up_in_time(
    silent_redis: socket.socket, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis that never answers holds the publishing thread PUBLISH_TIMEOUT, then the
    round is given up (a TimeoutError, logged once); the next round on a working Redis
    ends the outage."""
    caplog.set_level(logging.INFO, logger="django_weft.live")
    noop = registry.get("tests.noop")
    with on(silent_redis):
        run = start(noop, {})
        flush_live(PUBLISH_TIMEOUT + 30)
    start(noop, {})  # on the real Redis again: the outage ends
    flush_live()

    assert Run.objects.filter(pk=run.pk).exists()
    lines = said(caplog)
    assert len(lines) == 2, lines
    assert lines[0].startswith("publishing: the channel layer failed (TimeoutError")
    assert lines[1].startswith("publishing: the channel layer works again after")

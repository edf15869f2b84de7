"""The signals the metrics count: what each carries, and that a receiver that raises
changes nothing for the start, the sandbox call or the worker loop that sent it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import OperationalError
from django.dispatch import Signal

from django_weft.engine.database.outages import Outage
from django_weft.models import Run
from django_weft.operations import start
from django_weft.signals import outage_ended, outage_started, run_started


@pytest.fixture
def connected() -> Iterator[Callable[[Signal, Callable[..., None]], None]]:
    """Connect a receiver for the test's length."""
    made: list[tuple[Signal, str]] = []

    def connect(signal: Signal, receiver: Callable[..., None]) -> None:
        uid = f"tests.observe.{len(made)}"
        signal.connect(receiver, dispatch_uid=uid, weak=False)
        made.append((signal, uid))

    yield connect
    for signal, uid in made:
        signal.disconnect(dispatch_uid=uid)


def broken(sender: Any, **kwargs: Any) -> None:
    raise RuntimeError("a receiver's bug")


@pytest.mark.django_db(transaction=True)
def test_run_started_is_sent_after_commit_with_the_run(connected: Any) -> None:
    """The receiver reads the run as stored: it is committed when the signal comes."""
    heard: list[tuple[str, bool]] = []
    connected(
        run_started,
        lambda sender, run, **_: heard.append((run.job, Run.objects.filter(pk=run.pk).exists())),
    )
    start("tests.noop")
    assert heard == [("tests.noop", True)]


@pytest.mark.django_db(transaction=True)
def test_a_receiver_that_raises_does_not_fail_a_start(
    connected: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The run is started and returned; Django logs the receiver's error."""
    connected(run_started, broken)
    run = start("tests.noop")
    assert Run.objects.filter(pk=run.pk).exists()
    assert "a receiver's bug" in caplog.text


def test_a_receiver_that_raises_does_not_break_the_outage_boundary(
    connected: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker loop's error boundary backs off and recovers as usual."""
    connected(outage_started, broken)
    connected(outage_ended, broken)
    outage = Outage(logging.getLogger("tests.outage"))
    assert outage.failed("heartbeat", OperationalError("gone")) > 0
    assert outage.succeeded()
    logged = [record for record in caplog.records if record.name == "django.dispatch"]
    assert [str(record.exc_info and record.exc_info[1]) for record in logged] == [
        "a receiver's bug",
        "a receiver's bug",
    ]

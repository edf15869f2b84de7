"""The publishing thread (django_weft.live.outbox): rounds, coalescing, flush and stop.

Each test's ``deliver`` records the rounds and, where the test needs a round to be out
while it hands more over, waits on an event the test sets: no sleeps, no deadlines.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Iterator

import pytest

from django_weft.live.outbox import Outbox

Round = tuple[list[uuid.UUID], list[int]]


class Recorder:
    """A deliver() that notes each round; ``hold`` keeps the next round out until set."""

    def __init__(self) -> None:
        self.rounds: list[Round] = []
        self.threads: set[str] = set()
        self.hold = threading.Event()
        self.hold.set()
        self.out = threading.Event()
        self.fail_next = False

    def __call__(
        self, run_ids: list[uuid.UUID], document_ids: list[int], loop: asyncio.AbstractEventLoop
    ) -> None:
        self.rounds.append((run_ids, document_ids))
        self.threads.add(threading.current_thread().name)
        self.out.set()
        self.hold.wait()
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("a bug in a round")


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def outbox(recorder: Recorder) -> Iterator[Outbox]:
    built = Outbox(recorder, name="weft-test-outbox")
    yield built
    recorder.hold.set()
    assert built.stop(30), "the outbox's thread did not end"


A, B = uuid.uuid4(), uuid.uuid4()


def test_outbox_starts_no_thread_until_something_is_handed_over(
    outbox: Outbox, recorder: Recorder
) -> None:
    """A process that never publishes never has a publishing thread."""
    assert not outbox.started
    assert outbox.flush(0), "nothing handed over: nothing to wait for"
    outbox.hand_over([A], [])
    assert outbox.started
    assert outbox.flush(30)
    assert recorder.rounds == [([A], [])]
    assert recorder.threads == {"weft-test-outbox"}, "delivered on the outbox's own thread"


def test_outbox_coalesces_what_is_handed_over_while_a_round_is_out(
    outbox: Outbox, recorder: Recorder
) -> None:
    """Changes of one run handed over several times meanwhile make one entry of the next
    round, in the order first handed over: the round reads each row once, as it is then."""
    recorder.hold.clear()
    outbox.hand_over([A], [])
    assert recorder.out.wait(30)
    outbox.hand_over([B, A], [7])
    outbox.hand_over([A], [7, 8])
    outbox.hand_over([B], [])
    assert not outbox.flush(0), "the first round is still out"
    recorder.hold.set()
    assert outbox.flush(30)
    assert recorder.rounds == [([A], []), ([B, A], [7, 8])]


def test_outbox_flush_waits_only_for_what_came_before_it(
    outbox: Outbox, recorder: Recorder
) -> None:
    """flush() is False while a change handed over before it is undelivered, then True."""
    recorder.hold.clear()
    outbox.hand_over([A], [])
    assert recorder.out.wait(30)
    assert not outbox.flush(0)
    recorder.hold.set()
    assert outbox.flush(30)


def test_outbox_lives_on_after_a_round_that_raised(
    outbox: Outbox, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    """A round that raises is logged and counted as delivered; the next round comes."""
    recorder.fail_next = True
    outbox.hand_over([A], [])
    assert outbox.flush(30), "a failed round does not keep flush() waiting"
    outbox.hand_over([B], [])
    assert outbox.flush(30)
    assert recorder.rounds == [([A], []), ([B], [])]
    failures = [r for r in caplog.records if r.name == "django_weft.live"]
    assert [r.getMessage() for r in failures] == ["could not publish a change to the live views"]
    assert failures[0].levelno == logging.ERROR


def test_outbox_stop_delivers_what_is_pending_and_a_later_change_starts_again(
    outbox: Outbox, recorder: Recorder
) -> None:
    """stop() ends the thread after delivering what was handed over; publishing goes on
    with a new thread if something changes afterwards."""
    recorder.hold.clear()
    outbox.hand_over([A], [])
    assert recorder.out.wait(30)
    outbox.hand_over([B], [])
    recorder.hold.set()
    assert outbox.stop(30)
    assert recorder.rounds == [([A], []), ([B], [])]
    assert not outbox.started

    outbox.hand_over([A], [1])
    assert outbox.flush(30)
    assert recorder.rounds[-1] == ([A], [1])


def test_outbox_keeps_rounds_an_interval_apart_and_flush_does_not_wait_for_it(
    recorder: Recorder,
) -> None:
    """The first change goes out at once (after the coalescing window); changes that come
    within the interval after a round wait for the next one, all in one round, and a
    flush() sends them without waiting for the interval."""
    hourly = Outbox(recorder, name="weft-test-outbox", interval=3600)
    try:
        hourly.hand_over([A], [])
        assert recorder.out.wait(30), "the first change waits for no interval"
        recorder.out.clear()
        hourly.hand_over([B], [])
        hourly.hand_over([A], [9])
        # A wait that a busy machine cannot make fail: the next round is an hour away.
        assert not recorder.out.wait(0.5), "a round within the interval after the last one"
        assert hourly.flush(30), "flush() waits for what is pending, not for the interval"
        assert recorder.rounds == [([A], []), ([B, A], [9])]
    finally:
        assert hourly.stop(30)

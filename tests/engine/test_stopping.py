"""After the first stop signal no thread of the worker claims a run (engine/shutdown.py).

The stop is looked at where each claim is made, not only where the loop decides to
claim: a signal lands wherever the worker is, so a round the loop began before it still
reaches its claim step, and a run thread may have decided to claim its next run just
before it. The executor holds its tasks until the test runs them, and the workers do not
LISTEN, so each check sees one moment however busy the machine. The same with a real
``runjobs`` and SIGTERM is in tests/faults/test_worker_faults.py.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial

import pytest
from django.test import override_settings

from django_weft.engine.worker.loop import Worker
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus
from django_weft.operations import start
from django_weft.testing import DrivenClock
from tests.executors import HeldThreads
from tests.patience import EVENTUALLY

pytestmark = pytest.mark.django_db(transaction=True)

STOPPING = "stopping: no new runs"


class SignalAtNextRead(DrivenClock):
    """A driven clock that, once armed, calls ``signal`` at its next read: a stop
    landing at the moment the worker next looks at the time."""

    def __init__(self, start: datetime) -> None:
        super().__init__(start)
        self.signal: Callable[[], None] | None = None

    def now(self) -> datetime:
        signal, self.signal = self.signal, None
        if signal is not None:
            signal()
        return super().now()


@pytest.fixture
def worker(clock: DrivenClock) -> Iterator[Worker]:
    """A started worker with two held run threads that does not LISTEN; closed after the
    test, its held runs run first."""
    with override_settings(WEFT_LISTEN_DATABASE=None):
        started = Worker(clock=SignalAtNextRead(clock.now()), executor=HeldThreads(2))
        started.start()
        yield started
    started.stop()
    started.executor.release()  # type: ignore[attr-defined]
    started.close()


def queued(count: int) -> list[Run]:
    noop = registry.get("tests.noop")
    return [start(noop) for _ in range(count)]


def test_the_loop_s_claim_step_after_a_stop_takes_nothing(worker: Worker) -> None:
    """A round chooses its steps when it begins; a stop that lands during it leaves its
    claim step in place. That step claims nothing once the stop came, however many runs
    wait and slots are free: they stay queued for other workers."""
    queued(3)
    worker.stop()
    assert not worker.intake.step(worker.clock.now(), Changes())
    assert Run.objects.filter(status=RunStatus.QUEUED).count() == 3
    assert not worker.in_flight


def test_a_run_thread_that_decided_to_claim_before_a_stop_claims_nothing(
    worker: Worker,
) -> None:
    """A run thread ended its run under a backlog and decided to claim the next one; the
    stop lands before its claim (at its read of the clock): it claims nothing, and the
    runs it would have taken stay queued."""
    queued(4)
    assert worker.intake.step(worker.clock.now(), Changes())
    assert Run.objects.filter(status=RunStatus.QUEUED).count() == 2

    worker.clock.signal = worker.stop  # type: ignore[attr-defined]
    worker.executor.release()  # type: ignore[attr-defined]
    assert worker.is_stopping, "the stop landed while the threads ran"
    assert len(worker.reports) == 2, "the two runs in hand ended"
    assert Run.objects.filter(status=RunStatus.QUEUED).count() == 2


def test_the_stop_is_said_once_no_claim_is_under_way(
    worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    """Claims on two threads go on side by side; a stop that comes during them is in
    force at once and waits for neither: "stopping" is logged as the last of them ends,
    once, and every claim after it takes nothing. So no claim ends after the line."""
    shutdown = worker.shutdown
    all_inside = threading.Barrier(3)  # both claims under way at once, and the test
    let_go = [threading.Event(), threading.Event()]

    def claim_under_way(number: int) -> list[Run]:
        all_inside.wait(EVENTUALLY)
        assert let_go[number].wait(EVENTUALLY)
        return []

    claimers = [
        threading.Thread(target=shutdown.unless_stopping, args=(partial(claim_under_way, n),))
        for n in (0, 1)
    ]
    with caplog.at_level(logging.INFO, logger="django_weft.worker"):
        for claimer in claimers:
            claimer.start()
        all_inside.wait(EVENTUALLY)
        worker.stop()
        assert worker.is_stopping
        assert STOPPING not in caplog.text, "said while two claims were under way"
        let_go[0].set()
        claimers[0].join(EVENTUALLY)
        assert STOPPING not in caplog.text, "said while a claim was under way"
        let_go[1].set()
        claimers[1].join(EVENTUALLY)
        assert STOPPING in caplog.text, "said as the last claim ended"
        assert shutdown.unless_stopping(lambda: pytest.fail("claimed after the stop")) == []
        worker.stop()
    assert caplog.text.count(STOPPING) == 1


def test_a_stop_inside_the_loop_s_own_claim_is_said_when_it_ends(
    worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    """The signal handler runs on the loop's thread, which may be claiming: the stop does
    not wait for that claim (it would wait for itself), and is logged as the claim ends."""
    said_during: list[bool] = []

    def claim_interrupted_by_a_signal() -> list[Run]:
        worker.stop()
        said_during.append(STOPPING in caplog.text)
        return []

    with caplog.at_level(logging.INFO, logger="django_weft.worker"):
        assert worker.shutdown.unless_stopping(claim_interrupted_by_a_signal) == []
    assert said_during == [False]
    assert caplog.text.count(STOPPING) == 1

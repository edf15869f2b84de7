"""Run threads claim their next run themselves under a backlog (engine/intake.py).

The worker's loop is never ticked between the first claim and the checks below: what
ran, ran because the run thread took it. The executor holds its tasks until the test
runs them (on the test's thread, beside a loop that is not running), so each check sees
one moment, however busy the machine. The workers do not LISTEN: a NOTIFY arriving on
PostgreSQL would say "more runs" on its own schedule, and what a thread does must here
follow from the claims alone, the same on both databases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.test import override_settings

from django_weft.engine.worker.executors import Executor, InlineExecutor
from django_weft.engine.worker.loop import Worker
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus
from django_weft.operations import start
from django_weft.testing import DrivenClock
from tests.executors import HeldThreads

pytestmark = pytest.mark.django_db(transaction=True)

#: The ``worker_with`` fixture: an executor in, a started worker out.
MakeWorker = Callable[[Executor], Worker]


@pytest.fixture
def worker_with(clock: DrivenClock) -> Iterator[MakeWorker]:
    """Call it with an executor for a started worker that does not LISTEN; each is
    closed after the test, its held runs run first."""
    started: list[Worker] = []

    def make(executor: Executor) -> Worker:
        worker = Worker(clock=clock, executor=executor)
        worker.start()
        started.append(worker)
        return worker

    with override_settings(WEFT_LISTEN_DATABASE=None):
        yield make
    for worker in started:
        worker.stop()
        if isinstance(worker.executor, HeldThreads):
            worker.executor.release()
        worker.close()


def queued(count: int) -> list[Run]:
    noop = registry.get("tests.noop")
    return [start(noop) for _ in range(count)]


def first_claim(worker: Worker) -> None:
    """The loop's claim step, alone: the only claim the loop makes in these tests."""
    assert worker.intake.step(worker.clock.now(), Changes())


def test_run_threads_claim_and_run_the_backlog_without_the_loop(
    worker_with: MakeWorker,
) -> None:
    """Two threads, four queued runs, one claim by the loop (two runs): the threads run
    all four, claiming the next ones themselves, and the loop records the four reports
    afterwards."""
    runs = queued(4)
    worker = worker_with(HeldThreads(2))
    first_claim(worker)
    assert Run.objects.filter(status=RunStatus.QUEUED).count() == 2

    worker.executor.release()  # type: ignore[attr-defined]
    assert len(worker.reports) == 4, "each run was executed and reported"
    assert not Run.objects.filter(status=RunStatus.QUEUED).exists(), "the threads claimed them"
    claimed = Run.objects.filter(pk__in=[run.pk for run in runs])
    assert {(run.status, run.worker_id, run.attempt) for run in claimed} == {
        (RunStatus.RUNNING, worker.process.pk, 1)  # type: ignore[union-attr]
    }, "claimed once each, by this worker, and not yet recorded"
    assert len(worker.in_flight) == 4

    worker.tick()
    assert {run.status for run in claimed.all()} == {RunStatus.DONE}
    assert not worker.in_flight


def test_a_run_thread_claims_in_the_claims_order(worker_with: MakeWorker) -> None:
    """What a thread claims next is what the loop's claim would have taken: the highest
    priority first."""
    noop = registry.get("tests.noop")
    low = start(noop, priority=0)
    high = start(noop, priority=5)
    first = start(noop, priority=9)
    worker = worker_with(HeldThreads(1))
    first_claim(worker)
    worker.executor.release()  # type: ignore[attr-defined]
    assert [execution.run.pk for execution in worker.in_flight] == [first.pk, high.pk]
    assert Run.objects.get(pk=low.pk).status == RunStatus.QUEUED


@pytest.mark.parametrize(
    "executor",
    [
        pytest.param(HeldThreads, id="threads-after-a-stop"),
        pytest.param(InlineExecutor, id="inline-executor"),
    ],
)
def test_the_run_in_hand_ends_and_nothing_more_is_claimed(
    worker_with: MakeWorker, executor: type[Executor]
) -> None:
    """After a stop, a thread's run in hand ends and the rest stays queued for other
    workers; an inline executor runs in the loop's own thread, so the claim step runs
    what it claimed and nothing more."""
    queued(3)
    worker = worker_with(executor(1))
    first_claim(worker)
    if isinstance(worker.executor, HeldThreads):
        worker.stop()
        worker.executor.release()
    assert len(worker.reports) == 1
    assert Run.objects.filter(status=RunStatus.QUEUED).count() == 2


def test_a_thread_claims_only_under_a_backlog(worker_with: MakeWorker) -> None:
    """A claim that left slots free said the queue was empty: a run started after it waits
    for the loop's next claim (which a NOTIFY or the poll interval brings), not for a
    query by every thread that ends a run."""
    queued(1)
    worker = worker_with(HeldThreads(2))
    first_claim(worker)
    later = queued(1)[0]
    worker.executor.release()  # type: ignore[attr-defined]
    assert len(worker.reports) == 1
    assert Run.objects.get(pk=later.pk).status == RunStatus.QUEUED


def test_threads_stop_claiming_while_the_loop_has_reports_to_record(
    worker_with: MakeWorker,
) -> None:
    """Outcomes not yet recorded die with a killed worker: no thread takes another run
    once more reports wait than the executor has slots."""
    queued(6)
    worker = worker_with(HeldThreads(2))
    first_claim(worker)
    worker.executor.release()  # type: ignore[attr-defined]
    # The first thread ran its run and two more (one report, then two, waiting: not
    # more than two); the second found three waiting and took none.
    assert len(worker.reports) == 4
    assert Run.objects.filter(status=RunStatus.QUEUED).count() == 2
    worker.tick()
    assert Run.objects.filter(status=RunStatus.DONE).count() == 4


def test_giving_up_on_a_reported_run_leaves_its_successor_s_thread_alone(
    worker_with: MakeWorker,
) -> None:
    """A successor takes over its predecessor's slot: giving up on the predecessor (its
    report waiting, say through an outage, past its timeout) must not abandon the thread
    now running the successor; giving up on the successor does."""
    queued(2)
    worker = worker_with(HeldThreads(1))
    first_claim(worker)
    (slot,) = worker.executor.held  # type: ignore[attr-defined]
    worker.executor.release()  # type: ignore[attr-defined]
    predecessor, successor = worker.in_flight
    assert successor.handle is slot
    worker.in_flight.give_up(predecessor)
    assert worker.executor.abandoned == []  # type: ignore[attr-defined]
    worker.in_flight.give_up(successor)
    assert worker.executor.abandoned == [slot]  # type: ignore[attr-defined]

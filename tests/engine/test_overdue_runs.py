"""A timeout is a promise the cluster keeps (engine/reaping.py ``finish_overdue``).

A worker that is paused, hung, or whose loop a job holds (the GIL) is alive, and keeps
its runs, but not past their timeouts: once a run is past its job's timeout and
``WEFT_TIMEOUT_GRACE`` and its worker has missed two heartbeats, another worker finishes
it ``lost`` (``Timeout``), fenced as any finish; the stuck worker's late outcome is
discarded, and its runs without a timeout stay its own. Here the "paused" worker is one
the test does not tick, its runs held in its executor, on the driven clock; the lost-after
window (30 s) is never reached, so SQLite's rule (silence alone is death) does not decide
for it. The same with real processes and SIGSTOP is in tests/faults/test_worker_faults.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings

from django_weft.conf import weft_settings
from django_weft.engine.worker.loop import Worker
from django_weft.jobs.context import RunContext
from django_weft.jobs.outcomes import FinishContext, Outcome
from django_weft.jobs.registry import Job, registry
from django_weft.jobs.retries import Retry
from django_weft.models import Attempt, Document, Run, RunStatus, WorkerProcess
from django_weft.operations import start
from django_weft.testing import DrivenClock
from tests.executors import HeldThreads

pytestmark = pytest.mark.django_db(transaction=True)

INLINE = "django_weft.engine.worker.executors.InlineExecutor"
#: The job's timeout, and the grace these tests give it.
TIMEOUT, GRACE = 1.0, 2.0


def count_finish(outcome: Outcome, tx: FinishContext) -> None:
    key = f"tests:overdue:{outcome.run.pk}"
    tx.change(
        tx.document(key, schema="tests.finishes", initial=lambda: {"count": 0, "kinds": []}),
        lambda data: data.update(count=data["count"] + 1, kinds=[*data["kinds"], outcome.kind]),
    )


def finishes(run: Run) -> dict[str, Any]:
    document = Document.objects.filter(key=f"tests:overdue:{run.pk}").first()
    return document.data if document is not None else {"count": 0, "kinds": []}


def returns(ctx: RunContext) -> str:
    return "late"


@pytest.fixture
def jobs() -> Iterator[dict[str, Job]]:
    """A job with a timeout, the same retried when lost, and one without a timeout; each
    counts its finishes."""
    made = {
        "timed": Job(func=returns, name="tests.overdue_timed", timeout=TIMEOUT),
        "retried": Job(
            func=returns,
            name="tests.overdue_retried",
            timeout=TIMEOUT,
            retry=Retry(max_attempts=2, backoff=0, jitter=0, on=frozenset({"lost"})),
        ),
        "patient": Job(func=returns, name="tests.overdue_patient"),
    }
    for job in made.values():
        job.finish(count_finish)
        registry.register(job)
    yield made
    for job in made.values():
        registry.unregister(job.name)


@pytest.fixture
def reaper(clock: DrivenClock) -> Iterator[Worker]:
    """A worker that claims nothing here (another queue), up for its own lost-after window
    so that it reaps at its next beat."""
    with override_settings(WEFT_TIMEOUT_GRACE=GRACE, WEFT_LISTEN_DATABASE=None):
        worker = Worker(clock=clock, executor=INLINE, schedules=False, queues=["elsewhere"])
        worker.start()
        clock.skip(timedelta(seconds=weft_settings.LOST_AFTER))
        worker.tick()
        yield worker
        worker.close()


@pytest.fixture
def paused(clock: DrivenClock, reaper: Worker) -> Iterator[Worker]:
    """A worker the test starts and then no longer ticks: paused, with the runs it claims
    held in its executor until the test wakes it (``executor.release()``)."""
    worker = Worker(clock=clock, executor=HeldThreads(4), schedules=False)
    worker.start()
    yield worker
    worker.stop()
    worker.executor.release()  # type: ignore[attr-defined]
    worker.close()


def silent_for(clock: DrivenClock, seconds: float, reaper: Worker) -> None:
    """Move time ``seconds`` on and let the reaper beat (and reap)."""
    clock.skip(timedelta(seconds=seconds))
    reaper.tick()


def test_a_silent_worker_s_run_past_its_timeout_is_finished_lost_by_another(
    clock: DrivenClock,
    jobs: dict[str, Job],
    reaper: Worker,
    paused: Worker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past the timeout and the grace, a worker one beat late keeps its run (its own loop
    will end it); once it has missed two beats another worker finishes it lost
    (Timeout). Its run without a timeout stays running on it, and it is not declared
    dead. Woken, it beats on as the same worker, its late outcome is discarded, its other
    run is recorded done, and each finish hook ran once."""
    overdue, patient = start(jobs["timed"]), start(jobs["patient"])
    paused.tick()
    assert set(Run.objects.values_list("status", "worker_id")) == {
        (RunStatus.RUNNING, paused.process.pk)  # type: ignore[union-attr]
    }
    identity = paused.process
    beat_interval = weft_settings.HEARTBEAT_INTERVAL

    silent_for(clock, beat_interval + 1, reaper)  # past timeout + grace, one beat missed
    assert Run.objects.get(pk=overdue.pk).status == RunStatus.RUNNING

    with caplog.at_level(logging.WARNING, logger="django_weft.worker"):
        silent_for(clock, beat_interval, reaper)  # two beats missed
    lost = Run.objects.get(pk=overdue.pk)
    assert (lost.status, lost.error_type) == (RunStatus.LOST, "Timeout")
    assert lost.error_message.startswith(
        f"the run passed its timeout and did not end within {GRACE:g}s more, while its"
        " worker was silent (no heartbeat for "
    )
    assert lost.error_message.endswith("s); another worker finished it")
    assert "finished 1 overdue run(s) of silent workers as lost" in caplog.text
    assert finishes(lost) == {"count": 1, "kinds": ["lost"]}
    assert Run.objects.get(pk=patient.pk).status == RunStatus.RUNNING, "no timeout: kept"
    assert WorkerProcess.objects.get(pk=identity.pk).stopped_at is None  # type: ignore[union-attr]

    paused.executor.release()  # type: ignore[attr-defined]
    with caplog.at_level(logging.INFO, logger="django_weft"):
        paused.tick()
    assert "was declared dead" not in caplog.text
    assert paused.process == identity, "it beat on as the same worker"
    assert Run.objects.get(pk=overdue.pk).status == RunStatus.LOST, "its late outcome lost"
    assert Run.objects.get(pk=patient.pk).status == RunStatus.DONE
    assert finishes(lost) == {"count": 1, "kinds": ["lost"]}
    assert finishes(patient) == {"count": 1, "kinds": ["done"]}


def test_an_overdue_run_is_retried_when_its_job_retries_lost(
    clock: DrivenClock, jobs: dict[str, Job], reaper: Worker, paused: Worker
) -> None:
    """The finish follows the job's retry policy, as for any lost run: the attempt is
    kept (lost, Timeout) and the run waits for its next one; no finish hook yet."""
    run = start(jobs["retried"])
    paused.tick()
    silent_for(clock, 2 * weft_settings.HEARTBEAT_INTERVAL + 1, reaper)
    retried = Run.objects.get(pk=run.pk)
    assert (retried.status, retried.attempt, retried.worker_id) == (RunStatus.QUEUED, 1, None)
    (attempt,) = Attempt.objects.filter(run=run)
    assert (attempt.number, attempt.status, attempt.error_type) == (1, RunStatus.LOST, "Timeout")
    assert attempt.worker_id == paused.process.pk  # type: ignore[union-attr]
    assert finishes(retried) == {"count": 0, "kinds": []}


def test_a_silent_worker_s_run_within_its_timeout_and_grace_is_kept(
    clock: DrivenClock, jobs: dict[str, Job], reaper: Worker, paused: Worker
) -> None:
    """Silence alone (short of the lost-after window) takes nothing: a run not yet past
    its timeout and grace stays with its worker, however many beats it missed."""
    with override_settings(WEFT_TIMEOUT_GRACE=20):
        run = start(jobs["timed"])
        paused.tick()
        silent_for(clock, 2 * weft_settings.HEARTBEAT_INTERVAL + 1, reaper)
        assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
        silent_for(clock, TIMEOUT + 20 - 2 * weft_settings.HEARTBEAT_INTERVAL, reaper)
        assert Run.objects.get(pk=run.pk).status == RunStatus.LOST

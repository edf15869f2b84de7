"""Task runs are runs: retries, abort, lost workers and timeouts, read back as results.

Each runs on the driven-clock rehearsal worker (inline executor), so an attempt ends
inside ``advance()`` and a retry waits exactly its backoff.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.db import transaction
from django.utils import timezone

from django_weft.engine.outcomes.finishing import AttemptReport, record_attempt
from django_weft.engine.runs.claiming import claim
from django_weft.engine.worker.reaping import finish_lost
from django_weft.jobs.registry import registry
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.live.changes import Changes
from django_weft.models import Attempt, Run, RunStatus, WorkerProcess
from django_weft.operations import abort as abort_run
from django_weft.operations import start
from django_weft.tasks import WeftBackend, aabort, abort
from django_weft.tasks.framework import (
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_finished,
    task_started,
)
from django_weft.tasks.results import PRUNED_WORKER
from django_weft.testing import Rehearsal
from tests.jobs import noop
from tests.tasks import fixtures, weft_fixtures
from tests.tasks.weft_fixtures import Flaky

MINUTE = timedelta(minutes=1)


def test_retries_keep_an_error_and_a_worker_per_attempt(rehearsal: Rehearsal) -> None:
    """READY between attempts, an error per failed attempt, the first and latest starts."""
    result = weft_fixtures.flaky.enqueue(succeed_on=3)
    first_start = rehearsal.now()
    rehearsal.advance(timedelta(0))
    result.refresh()
    assert result.status == TaskResultStatus.READY, "waiting for its retry"
    assert result.finished_at is None
    assert (result.started_at, result.last_attempted_at) == (first_start, first_start)
    assert result.attempts == 1
    assert [error.exception_class for error in result.errors] == [Flaky]
    assert result.errors[0].exception_class_path == "tests.tasks.weft_fixtures.Flaky"
    assert result.errors[0].traceback.endswith("Flaky: attempt 1 failed\n")

    rehearsal.advance(MINUTE)
    second_start = rehearsal.now()
    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert (result.started_at, result.last_attempted_at) == (first_start, second_start)
    assert len(result.errors) == 2

    rehearsal.advance(MINUTE)
    result.refresh()
    worker = str(rehearsal.worker.process.pk)  # type: ignore[union-attr]
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 3, "the context's attempt was 3"
    assert result.started_at == first_start
    assert result.last_attempted_at == rehearsal.now()
    assert result.worker_ids == [worker, worker, worker]
    assert result.attempts == 3
    assert [e.traceback.splitlines()[-1] for e in result.errors] == [
        "tests.tasks.weft_fixtures.Flaky: attempt 1 failed",
        "tests.tasks.weft_fixtures.Flaky: attempt 2 failed",
    ]


def test_task_finished_only_once_the_result_is_final(
    rehearsal: Rehearsal,
) -> None:
    """task_started before each attempt, task_finished once: not after a retried one."""
    heard: list[tuple[str, str]] = []

    def started(sender: object, task_result: object, **kwargs: object) -> None:
        heard.append(("started", str(task_result.status)))  # type: ignore[attr-defined]

    def finished(sender: object, task_result: object, **kwargs: object) -> None:
        assert sender is WeftBackend
        heard.append(("finished", str(task_result.status)))  # type: ignore[attr-defined]

    task_started.connect(started, dispatch_uid="tests.started")
    task_finished.connect(finished, dispatch_uid="tests.finished")
    try:
        weft_fixtures.flaky.enqueue(succeed_on=2)
        rehearsal.advance(MINUTE)
    finally:
        task_started.disconnect(dispatch_uid="tests.started")
        task_finished.disconnect(dispatch_uid="tests.finished")
    assert heard == [
        ("started", "RUNNING"),
        ("started", "RUNNING"),
        ("finished", "SUCCESSFUL"),
    ]


def test_abort_of_a_queued_task_fails_it_with_run_aborted(rehearsal: Rehearsal) -> None:
    """abort(result) ends a queued run at once; the result says FAILED, RunAborted."""
    result = fixtures.calculate_meaning_of_life.enqueue()
    assert abort(result) is True
    assert abort(result) is False, "asked before"
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class_path == "django_weft.exceptions.RunAborted"
    assert error.exception_class.__name__ == "RunAborted"
    assert result.worker_ids == []
    rehearsal.advance(timedelta(0))
    assert Run.objects.get(pk=result.id).status == RunStatus.ABORTED, "never claimed"


def test_aabort_and_the_runs_own_abort_read_the_same(rehearsal: Rehearsal) -> None:
    """Aborting through weft's own abort (the console's, the API's) reads the same."""
    by_task = fixtures.noop_task.enqueue()
    by_run = fixtures.noop_task.enqueue()
    assert async_to_sync(aabort)(by_task) is True
    assert abort_run(Run.objects.get(pk=by_run.id)) is True
    for result in (by_task, by_run):
        result.refresh()
        assert result.errors[0].exception_class_path == "django_weft.exceptions.RunAborted"


@pytest.mark.django_db
def test_abort_of_a_plain_jobs_run_is_refused() -> None:
    """A result id that names a plain job's run is no task result."""
    plain = start(noop)
    stale = fixtures.noop_task.enqueue()
    object.__setattr__(stale, "id", str(plain.pk))
    with pytest.raises(TaskResultDoesNotExist):
        abort(stale)


@pytest.mark.django_db(transaction=True)
def test_lost_attempt_reads_as_run_lost_and_stays_counted_once_pruned() -> None:
    """A worker that stopped beating: FAILED with RunLost; its id is still counted once
    its row is gone."""
    moment = timezone.now()
    silent = WorkerProcess.objects.create(
        hostname="gone", pid=9, started_at=moment, last_beat=moment - timedelta(minutes=5)
    )
    result = fixtures.noop_task.enqueue()
    job = registry.get(fixtures.noop_task.module_path)
    claim([(job.name, job.version)], limit=1, worker=silent, now=moment, queues=None)
    finish_lost(now=moment, silent_since=moment - timedelta(seconds=30), changes=Changes())
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class_path == "django_weft.exceptions.RunLost"
    assert error.traceback == (
        "django_weft.exceptions.RunLost: the worker running it stopped beating\n"
    )
    assert result.worker_ids == [str(silent.pk)]
    silent.delete()
    result.refresh()
    assert result.worker_ids == [PRUNED_WORKER]
    assert result.attempts == 1


@pytest.mark.django_db(transaction=True)
def test_timed_out_attempt_reads_as_run_timed_out() -> None:
    """An attempt given up on past its timeout is retried, then fails: RunTimedOut, a
    TimeoutError, for each attempt."""
    moment = timezone.now()
    worker = WorkerProcess.objects.create(hostname="w", pid=1, started_at=moment, last_beat=moment)
    result = weft_fixtures.bounded.enqueue("x")
    job = registry.get(weft_fixtures.bounded.module_path)
    assert job.timeout == 30
    for attempt in (1, 2):
        [run] = claim([(job.name, job.version)], limit=1, worker=worker, now=moment, queues=None)
        report = AttemptReport(
            run_id=run.pk,
            job=run.job,
            worker_id=worker.pk,
            attempt=attempt,
            started_at=moment,
            status=RunStatus.LOST,
            error=ErrorRecord("Timeout", "the run passed its timeout", ""),
        )
        record_attempt(report, now=moment, changes=Changes())
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == [
        "django_weft.exceptions.RunTimedOut"
    ] * 2
    assert issubclass(result.errors[0].exception_class, TimeoutError)
    assert Attempt.objects.filter(run_id=result.id).count() == 1


def test_rolled_back_enqueue_leaves_no_run(rehearsal: Rehearsal) -> None:
    """Nothing enqueued in a rolled-back atomic() reaches a worker."""
    with transaction.atomic():
        fixtures.noop_task.enqueue()
        transaction.set_rollback(True)
    rehearsal.advance(timedelta(0))
    assert not Run.objects.exists()


def test_task_finished_is_not_sent_for_a_path_gone_meanwhile(
    rehearsal: Rehearsal, caplog: pytest.LogCaptureFixture
) -> None:
    """A finish whose task cannot be read back is logged; the finish itself stands."""
    result = fixtures.noop_task.enqueue()
    Run.objects.filter(pk=result.id).update(task_backend="gone")
    abort_run(Run.objects.get(pk=result.id))
    assert Run.objects.get(pk=result.id).status == RunStatus.ABORTED
    assert "task_finished not sent" in caplog.text


def test_a_failing_task_finished_receiver_does_not_stop_the_worker(
    rehearsal: Rehearsal, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(sender: object, **kwargs: object) -> None:
        raise RuntimeError("receiver bug")

    task_finished.connect(broken, dispatch_uid="tests.broken_receiver")
    try:
        first = fixtures.calculate_meaning_of_life.enqueue()
        rehearsal.advance(timedelta(0))
        second = fixtures.calculate_meaning_of_life.enqueue()
        rehearsal.advance(timedelta(0))
    finally:
        task_finished.disconnect(dispatch_uid="tests.broken_receiver")
    for result in (first, second):
        result.refresh()
        assert result.return_value == 42
    assert "task_finished receiver" in caplog.text
    assert "backing off" not in caplog.text

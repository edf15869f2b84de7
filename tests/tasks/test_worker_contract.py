"""django-tasks-db's worker suite, restated as a second, independent contract.

django-tasks-db (``django_tasks.backends.database``) is the database backend most
projects would come from; its ``db_worker`` tests describe what a worker owes a task.
Each case here is one of them against weft's worker, on the driven-clock rehearsal:

- run an enqueued task; a failing task; a complex exception; a complex return value;
- ``run_after``: not claimed before it, claimed at it, on the worker's clock;
- claim order: priority first, then ``run_after`` (for a task that has one), then enqueue
  time;
- queues a worker does not serve are left for another;
- the context's attempt and id;
- a stored path that no longer names a task stays blocked;
- an id that is not a UUID is no result.

Not restated: its ``prune_db_task_results`` command (weft prunes runs its own way, see
``WEFT_KEEP_RUNS``), ``--batch``/``--max-tasks`` flags (``runjobs --once`` and
``--concurrency``), its per-attempt ``worker_ids`` list on one row (weft keeps attempts
as rows: tests/tasks/test_task_runs.py).
"""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest
from django.test import override_settings

from django_weft.live.projections import phase
from django_weft.models import Run, RunStatus
from django_weft.tasks.framework import (
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    default_task_backend,
    task_started,
)
from django_weft.testing import Rehearsal
from tests.processes import runjobs, wait_for
from tests.tasks import fixtures

MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)


def test_run_enqueued_task(rehearsal: Rehearsal) -> None:
    result = fixtures.calculate_meaning_of_life.enqueue()
    rehearsal.advance(timedelta(0))
    result.refresh()
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, 42)


def test_failing_task(rehearsal: Rehearsal) -> None:
    result = fixtures.failing_task_value_error.enqueue()
    rehearsal.advance(timedelta(0))
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is ValueError


def test_complex_exception_and_return_value(rehearsal: Rehearsal) -> None:
    raised = fixtures.complex_exception.enqueue()
    returned = fixtures.complex_return_value.enqueue()
    rehearsal.advance(timedelta(0))
    raised.refresh()
    returned.refresh()
    assert raised.errors[0].exception_class is ValueError
    assert returned.errors[0].exception_class is TypeError


def test_run_after_is_not_claimed_early(rehearsal: Rehearsal) -> None:
    """The worker sleeps until run_after (its wake-up includes it) and not a moment less."""
    start = rehearsal.now()
    result = fixtures.calculate_meaning_of_life.using(run_after=start + 10 * MINUTE).enqueue()
    rehearsal.advance(10 * MINUTE - timedelta(seconds=1))
    result.refresh()
    assert result.status == TaskResultStatus.READY
    rehearsal.advance(timedelta(seconds=1))
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.started_at == start + 10 * MINUTE
    assert result.task.run_after == start + 10 * MINUTE


def started_in_order(rehearsal: Rehearsal) -> list[str]:
    """The ids of the tasks the worker starts now, in the order it starts them."""
    started: list[str] = []

    def heard(sender: object, task_result: TaskResult, **kwargs: object) -> None:
        started.append(task_result.id)

    task_started.connect(heard, dispatch_uid="tests.claim_order")
    try:
        rehearsal.advance(timedelta(0))
    finally:
        task_started.disconnect(dispatch_uid="tests.claim_order")
    return started


def test_claim_order_is_priority_then_enqueue_time(rehearsal: Rehearsal) -> None:
    """Higher priority first; among equals, the one enqueued first."""
    rehearsal.restart(concurrency=1)
    low = fixtures.noop_task.using(priority=-10).enqueue()
    rehearsal.clock.skip(timedelta(seconds=1))
    first = fixtures.noop_task.enqueue()
    rehearsal.clock.skip(timedelta(seconds=1))
    second = fixtures.noop_task.enqueue()
    rehearsal.clock.skip(timedelta(seconds=1))
    high = fixtures.noop_task.using(priority=10).enqueue()
    assert started_in_order(rehearsal) == [high.id, first.id, second.id, low.id]


def test_claim_order_puts_a_passed_run_after_in_its_place(rehearsal: Rehearsal) -> None:
    """A task enqueued first but to run after 20 s goes after one enqueued at 10 s and
    before one enqueued at 30 s, once all three may run."""
    rehearsal.restart(concurrency=1)
    start = rehearsal.now()
    deferred = fixtures.noop_task.using(run_after=start + 20 * SECOND).enqueue()
    rehearsal.clock.skip(10 * SECOND)
    earlier = fixtures.noop_task.enqueue()
    rehearsal.clock.skip(20 * SECOND)
    later = fixtures.noop_task.enqueue()
    assert started_in_order(rehearsal) == [earlier.id, deferred.id, later.id]


@override_settings(
    TASKS={"default": {"BACKEND": "django_weft.tasks.WeftBackend", "QUEUES": ["default", "q1"]}}
)
def test_queues_a_worker_does_not_serve_are_left(rehearsal: Rehearsal) -> None:
    rehearsal.restart(queues=["default"])
    elsewhere = fixtures.noop_task.using(queue_name="q1").enqueue()
    here = fixtures.noop_task.enqueue()
    rehearsal.advance(timedelta(0))
    elsewhere.refresh()
    here.refresh()
    assert (here.status, elsewhere.status) == (TaskResultStatus.SUCCESSFUL, TaskResultStatus.READY)
    rehearsal.restart(queues=["q1"])
    rehearsal.advance(timedelta(0))
    elsewhere.refresh()
    assert elsewhere.status == TaskResultStatus.SUCCESSFUL


def test_context(rehearsal: Rehearsal) -> None:
    by_id = fixtures.get_task_id.enqueue()
    attempt = fixtures.test_context.enqueue(attempt=1)
    rehearsal.advance(timedelta(0))
    by_id.refresh()
    attempt.refresh()
    assert by_id.return_value == by_id.id
    assert attempt.status == TaskResultStatus.SUCCESSFUL


def test_a_path_that_no_longer_names_a_task_stays_blocked(rehearsal: Rehearsal) -> None:
    """Like a job that is not deployed: never claimed, shown blocked, args untouched."""
    result = fixtures.noop_task.enqueue(1)
    Run.objects.filter(pk=result.id).update(job="tests.tasks.fixtures.removed_since")
    rehearsal.advance(MINUTE)
    run = Run.objects.get(pk=result.id)
    assert (run.status, run.attempt) == (RunStatus.QUEUED, 0)
    assert phase(run) == "blocked"
    with pytest.raises(TaskResultDoesNotExist, match="names no task declared here"):
        default_task_backend.get_result(result.id)


@pytest.mark.django_db
def test_an_id_that_is_no_uuid_is_no_result() -> None:
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result("1")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_same_tasks_on_immediate_backend_and_on_a_runjobs_process() -> None:
    """A project's tasks, tested on ImmediateBackend, run unchanged on weft: only TASKS
    differs, and a real ``runjobs`` process runs them."""
    with override_settings(TASKS=fixtures.IMMEDIATE):
        ran_here = [
            fixtures.calculate_meaning_of_life.enqueue(),
            fixtures.noop_task_async.enqueue(1, two=2),
            fixtures.failing_task_value_error.enqueue(),
        ]
    queued = [
        fixtures.calculate_meaning_of_life.enqueue(),
        fixtures.noop_task_async.enqueue(1, two=2),
        fixtures.failing_task_value_error.enqueue(),
    ]
    worker = runjobs()
    try:
        wait_for(
            lambda: all(default_task_backend.get_result(r.id).is_finished for r in queued),
            what="the tasks to finish on runjobs",
            timeout=60,
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.finish()
    ran_there = [default_task_backend.get_result(r.id) for r in queued]
    assert [r.status for r in ran_there] == [r.status for r in ran_here]
    assert ran_there[0].return_value == ran_here[0].return_value == 42
    assert [e.exception_class_path for e in ran_there[2].errors] == [
        e.exception_class_path for e in ran_here[2].errors
    ]

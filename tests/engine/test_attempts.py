"""Attempts: retries with back-off, tracebacks, errors of any kind, timeouts, and fencing.

Driven-clock tests use the inline executor, so each attempt runs inside ``advance()``;
timeout tests need real threads and real time, since a run past its timeout is stopped
from the worker's own thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError, connections
from django.test import override_settings

from django_weft.engine.database.outages import BACKOFF_CAP, BACKOFF_JITTER, Outage
from django_weft.engine.outcomes.finishing import AttemptReport, record_attempt
from django_weft.engine.worker.loop import Worker
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.models import (
    Attempt,
    Document,
    LastStatus,
    Run,
    RunStatus,
    Schedule,
    WorkerProcess,
)
from django_weft.operations import abort, start
from django_weft.testing import DrivenClock, Rehearsal
from tests.executors import HeldExecutor
from tests.jobs import open_gate
from tests.processes import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

MINUTE = timedelta(minutes=1)


def finishes(run: Run) -> dict[str, Any]:
    data: dict[str, Any] = Document.objects.get(key=f"tests:finishes:{run.pk}").data
    return data


def test_retry_failing_twice_then_done_on_attempt_three(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal
) -> None:
    """Two failed attempts are kept with their tracebacks; the third ends the run done."""
    run = start(registry.get("tests.flaky"))
    rehearsal.advance(timedelta(0))
    waiting = Run.objects.get(pk=run.pk)
    assert (waiting.status, waiting.attempt) == (RunStatus.QUEUED, 1)
    assert waiting.retry_at == clock.now() + MINUTE
    assert waiting.error_type == "ConnectionError", "the last attempt's error shows while it waits"

    rehearsal.advance(MINUTE - timedelta(seconds=1))
    assert Run.objects.get(pk=run.pk).attempt == 1, "not claimed before its retry_at"
    rehearsal.advance(timedelta(seconds=1))
    assert Run.objects.get(pk=run.pk).attempt == 2
    rehearsal.advance(2 * MINUTE)

    done = Run.objects.get(pk=run.pk)
    assert (done.status, done.attempt, done.result) == (RunStatus.DONE, 3, 3)
    assert (done.error_type, done.error_traceback, done.retry_at) == ("", "", None)
    attempts = list(Attempt.objects.filter(run=run))
    assert [(a.number, a.status, a.error_type) for a in attempts] == [
        (1, RunStatus.FAILED, "ConnectionError"),
        (2, RunStatus.FAILED, "ConnectionError"),
    ]
    for number, attempt in enumerate(attempts, start=1):
        assert attempt.error_message == f"attempt {number} could not reach the mail server"
        assert attempt.error_traceback.startswith("Traceback (most recent call last):")
        assert 'raise ConnectionError(f"attempt {ctx.attempt}' in attempt.error_traceback
        assert attempt.worker_id == worker.process.pk  # type: ignore[union-attr]
        assert attempt.started_at is not None
        assert attempt.started_at <= attempt.ended_at
    assert finishes(done) == {"count": 1, "kinds": ["done"]}, "the hook ran once, at the end"


def test_retry_attempts_used_up_end_the_run_failed(rehearsal: Rehearsal) -> None:
    """The last attempt's error is the run's; the earlier one is an attempt record."""
    run = start(registry.get("tests.always_fails"))
    rehearsal.advance(MINUTE)
    failed = Run.objects.get(pk=run.pk)
    assert (failed.status, failed.attempt) == (RunStatus.FAILED, 2)
    assert failed.error_message == "attempt 2 failed too"
    assert "ValueError: attempt 2 failed too" in failed.error_traceback
    assert list(Attempt.objects.filter(run=run).values_list("number", "error_message")) == [
        (1, "attempt 1 failed too")
    ]


def test_failed_run_stores_its_traceback_without_retries(rehearsal: Rehearsal) -> None:
    """A job without a retry policy fails once, with its full traceback on the run."""
    run = start(registry.get("tests.broken"))
    rehearsal.advance(timedelta(0))
    failed = Run.objects.get(pk=run.pk)
    assert failed.status == RunStatus.FAILED
    assert failed.error_traceback.startswith("Traceback (most recent call last):")
    assert 'raise RuntimeError("broken has no rows to work on")' in failed.error_traceback
    assert failed.error_traceback.rstrip().endswith("RuntimeError: broken has no rows to work on")
    assert not Attempt.objects.exists()


def test_retry_never_types_fail_at_once(rehearsal: Rehearsal) -> None:
    """An exception type the policy never retries ends the run at its first attempt."""
    run = start(registry.get("tests.never_retried"))
    rehearsal.advance(timedelta(0))
    failed = Run.objects.get(pk=run.pk)
    assert (failed.status, failed.attempt, failed.error_type) == (RunStatus.FAILED, 1, "KeyError")
    assert not Attempt.objects.exists()


def test_retry_schedule_record_shows_the_final_attempt(
    clock: DrivenClock, rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """While a fired run is retried its schedule says running; then the final outcome."""
    row = Schedule.objects.create(name="mail", job="tests.flaky", at=clock.now())
    rehearsal.advance(timedelta(0))
    assert Schedule.objects.get(pk=row.pk).last_status == LastStatus.RUNNING
    assert failures == [], "a retried attempt is not a failure of the schedule"
    rehearsal.advance(3 * MINUTE)
    row.refresh_from_db()
    assert (row.last_status, row.last_error_type) == (LastStatus.OK, "")
    assert Run.objects.get(schedule=row).attempt == 3


def test_lost_run_is_retried_when_its_job_allows(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal
) -> None:
    """A run whose worker died is queued again; the lost attempt is on record."""
    worker.start()
    run = start(registry.get("tests.retried_when_lost"), {"seconds": 0})
    now = clock.now()
    dead = WorkerProcess.objects.create(
        hostname="gone", pid=1, started_at=now - MINUTE, last_beat=now - MINUTE
    )
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING, worker=dead, attempt=1, started_at=now - MINUTE
    )
    clock.skip(timedelta(seconds=31))  # a worker reaps after a lost-after window of its own
    rehearsal.advance(timedelta(0))
    retried = Run.objects.get(pk=run.pk)
    assert (retried.status, retried.attempt, retried.result) == (RunStatus.DONE, 2, 2)
    (lost,) = Attempt.objects.filter(run=run)
    assert (lost.number, lost.status, lost.error_type) == (1, RunStatus.LOST, "WorkerLost")
    assert lost.worker_id == dead.pk
    assert finishes(retried) == {"count": 1, "kinds": ["done"]}


def test_late_report_of_an_earlier_attempt_is_discarded(caplog: pytest.LogCaptureFixture) -> None:
    """Only the claim that holds the run finishes it: worker and attempt both count."""
    run = start(registry.get("tests.flaky"))
    now = run.created_at
    worker = WorkerProcess.objects.create(hostname="h", pid=1, started_at=now, last_beat=now)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, worker=worker, attempt=2)
    late = AttemptReport(
        run_id=run.pk,
        job=run.job,
        worker_id=worker.pk,
        attempt=1,
        started_at=now,
        status=RunStatus.DONE,
        result=1,
    )
    with caplog.at_level(logging.WARNING, logger="django_weft.runs"):
        assert record_attempt(late, now=now, changes=Changes()) is None
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
    assert "late outcome of run" in caplog.text
    assert "discarded" in caplog.text
    current = AttemptReport(
        run_id=run.pk,
        job=run.job,
        worker_id=worker.pk,
        attempt=3,
        started_at=now,
        status=RunStatus.DONE,
        result=3,
    )
    Run.objects.filter(pk=run.pk).update(attempt=3)
    assert record_attempt(current, now=now, changes=Changes()) is not None
    assert Run.objects.get(pk=run.pk).status == RunStatus.DONE


def test_keyboard_interrupt_in_an_inline_job_is_recorded_then_raised(
    rehearsal: Rehearsal, worker: Worker
) -> None:
    """On the worker's own thread the interrupt ends the worker, after the run is failed."""
    run = start(registry.get("tests.raises_base"), {"kind": "keyboard_interrupt"})
    with pytest.raises(KeyboardInterrupt):
        rehearsal.advance(timedelta(0))
    worker.close()
    failed = Run.objects.get(pk=run.pk)
    assert (failed.status, failed.error_type) == (RunStatus.FAILED, "KeyboardInterrupt")


@pytest.mark.parametrize(
    ("kind", "error_type"),
    [
        ("system_exit", "SystemExit"),
        ("keyboard_interrupt", "KeyboardInterrupt"),
        ("cancelled", "CancelledError"),
    ],
)
def test_base_exception_in_a_job_fails_the_run_and_the_worker_goes_on(
    running_worker: Worker, kind: str, error_type: str
) -> None:
    """A job raising what is not an Exception ends failed; its thread serves the next run."""
    raised = start(registry.get("tests.raises_base"), {"kind": kind})
    wait_for(lambda: Run.objects.get(pk=raised.pk).is_finished, what="the failed run")
    failed = Run.objects.get(pk=raised.pk)
    assert (failed.status, failed.error_type) == (RunStatus.FAILED, error_type)
    assert failed.error_traceback.startswith("Traceback")
    after = [start(registry.get("tests.noop")) for _ in range(3)]
    wait_for(
        lambda: Run.objects.filter(pk__in=[r.pk for r in after], status="done").count() == 3,
        what="the runs after it",
    )


def test_cancelled_error_caused_by_an_abort_ends_aborted(running_worker: Worker) -> None:
    """An async job whose abort surfaces as CancelledError was aborted, not failed."""
    run = start(registry.get("tests.cancelled_on_abort"), {"seconds": 600})
    wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, what="the run")
    assert abort(run)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="the abort")
    assert Run.objects.get(pk=run.pk).status == RunStatus.ABORTED


def test_timeout_stops_a_run_that_checks(running_worker: Worker) -> None:
    """Past its timeout a run is asked to stop; one that stops has failed with Timeout."""
    run = start(registry.get("tests.slow"), {"seconds": 600})
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="the timeout")
    failed = Run.objects.get(pk=run.pk)
    assert (failed.status, failed.error_type) == (RunStatus.FAILED, "Timeout")
    assert failed.error_message == "the run passed its timeout of 0.5s and was stopped"
    assert failed.abort_requested_at is None, "a timeout is not somebody's abort request"
    assert (failed.finished_at - failed.started_at) >= timedelta(seconds=0.5)


@pytest.fixture
def single_worker() -> Iterator[Worker]:
    """A worker with one run thread, so a run that holds it shows in the next start."""
    worker = Worker(
        executor="django_weft.engine.worker.executors.ThreadExecutor",
        concurrency=1,
        poll_interval=0.05,
    )
    thread = threading.Thread(target=lambda: (worker.run(), connections.close_all()))
    thread.start()
    yield worker
    worker.force_stop()
    thread.join(30)


@override_settings(WEFT_TIMEOUT_GRACE=0.3)
def test_timeout_gives_up_on_a_run_that_ignores_it(single_worker: Worker) -> None:
    """A run that does not stop is finished lost after the grace; its slots are freed."""
    stubborn = registry.get("tests.stubborn")
    run = start(stubborn, {"seconds": 3600})  # until the test opens its gate
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="giving up")
    lost = Run.objects.get(pk=run.pk)
    assert (lost.status, lost.error_type) == (RunStatus.LOST, "Timeout")
    assert "did not stop within 0.3s" in lost.error_message
    # Its concurrency slot (the job allows one unfinished run) and its thread are free.
    second = start(stubborn, {"seconds": 0})
    wait_for(lambda: Run.objects.get(pk=second.pk).status == RunStatus.DONE, what="the next run")
    open_gate(run.pk)
    wait_for(lambda: not single_worker.in_flight, what="the abandoned run to end")
    assert Run.objects.get(pk=run.pk).status == RunStatus.LOST, "its late outcome was discarded"


def test_worker_declared_dead_fences_itself_and_registers_again(
    clock: DrivenClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A paused worker's run is lost elsewhere; its late outcome is discarded, it re-registers."""
    paused = Worker(clock=clock, executor=HeldExecutor(1))
    run = start(registry.get("tests.watched_sleep"), {"seconds": 0})
    paused.start()
    paused.tick()
    assert Run.objects.get(pk=run.pk).worker_id == paused.process.pk  # type: ignore[union-attr]
    first_identity = paused.process

    # Nothing from the paused worker for longer than lost-after, and (on PostgreSQL) its
    # liveness lock gone with its connection, as when the server gave up on a worker cut
    # off by the network: another worker reaps it.
    paused.membership.let_go()
    other = Worker(clock=clock, executor="django_weft.engine.worker.executors.InlineExecutor")
    other.start()
    clock.skip(timedelta(seconds=31))
    other.tick()
    assert Run.objects.get(pk=run.pk).status == RunStatus.LOST
    assert WorkerProcess.objects.get(pk=first_identity.pk).stopped_at is not None  # type: ignore[union-attr]

    # The paused worker wakes: its run ends, then its heartbeat tells it the news.
    paused.executor.release()  # type: ignore[attr-defined]
    with caplog.at_level(logging.INFO, logger="django_weft"):
        paused.tick()
    assert "was declared dead by another" in caplog.text
    assert f"late outcome of tests.watched_sleep run {run.pk} (done) discarded" in caplog.text
    assert Run.objects.get(pk=run.pk).status == RunStatus.LOST, "its late outcome lost"
    assert finishes(run) == {"count": 1, "kinds": ["lost"]}
    assert paused.process is not None
    assert paused.process.pk != first_identity.pk

    again = start(registry.get("tests.noop"))
    paused.tick()
    assert Run.objects.get(pk=again.pk).worker_id == paused.process.pk
    paused.executor.release()  # type: ignore[attr-defined]
    paused.close()
    other.close()


def test_new_worker_reaps_only_after_a_lost_after_window_of_its_own(clock: DrivenClock) -> None:
    """A worker does not count silence it may share (a database outage) as death."""
    now = clock.now()
    silent = WorkerProcess.objects.create(
        hostname="h", pid=1, started_at=now - MINUTE, last_beat=now - MINUTE
    )
    run = start(registry.get("tests.sleep"), {"seconds": 0})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, worker=silent, attempt=1)
    worker = Worker(
        clock=clock, executor="django_weft.engine.worker.executors.InlineExecutor", schedules=False
    )
    worker.start()
    clock.skip(timedelta(seconds=29))
    worker.tick()
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
    clock.skip(timedelta(seconds=6))  # the next heartbeat after the window
    worker.tick()
    assert Run.objects.get(pk=run.pk).status == RunStatus.LOST
    worker.close()


def test_run_threads_keep_their_connection_with_conn_max_age_zero(
    running_worker: Worker,
) -> None:
    """A worker is one long request: its run threads do not reconnect for every run."""
    assert connections["default"].settings_dict["CONN_MAX_AGE"] == 0
    seen: set[int] = set()
    for _ in range(8):
        run = start(registry.get("tests.connection_id"))
        wait_for(lambda run=run: Run.objects.get(pk=run.pk).is_finished, what="the run")  # type: ignore[misc]
        seen.add(Run.objects.get(pk=run.pk).result)
    assert len(seen) <= running_worker.executor.concurrency


def test_outage_backs_off_no_longer_than_its_cap() -> None:
    """However long an outage lasts, the next attempt is never more than the cap (with its
    jitter) away: a worker is busy again within seconds of the database coming back."""
    outage = Outage(logging.getLogger("tests.outage"), monotonic=lambda: 0.0)
    error = OperationalError("server closed the connection unexpectedly")
    waits = [outage.failed("claim", error) for _ in range(50)]
    assert max(waits) <= BACKOFF_CAP * (1 + BACKOFF_JITTER)
    assert waits[-1] >= BACKOFF_CAP * (1 - BACKOFF_JITTER), "it does reach the cap"


def test_outage_logs_once_per_streak(caplog: pytest.LogCaptureFixture) -> None:
    """The first failure is a warning, the rest debug lines, the recovery one info line."""
    moments = iter([0.0, 1.0, 2.5, 4.0])
    outage = Outage(logging.getLogger("tests.outage"), monotonic=lambda: next(moments))
    error = OperationalError("server closed the connection unexpectedly")
    with caplog.at_level(logging.DEBUG, logger="tests.outage"):
        first = outage.failed("claim", error)
        second = outage.failed("claim", error)
        outage.failed("heartbeat", error)
        assert outage.succeeded()
    levels = [record.levelname for record in caplog.records]
    assert levels == ["WARNING", "DEBUG", "DEBUG", "INFO"]
    assert "server closed the connection unexpectedly" in caplog.records[0].getMessage()
    assert "available again after 4.0s (3 failed attempts)" in caplog.records[-1].getMessage()
    assert 0 < first < second <= 2.5
    assert not outage.ongoing
    assert not outage.succeeded()


def test_an_attempt_keeps_the_output_it_left(rehearsal: Rehearsal) -> None:
    """The first attempt's output, written over by the second's in the run's state, is
    kept on its attempt record; the latest attempt's is the run's."""
    run = start(registry.get("tests.flaky_printer"))
    rehearsal.advance(MINUTE)
    done = Run.objects.select_related("state").get(pk=run.pk)
    assert (done.status, done.attempt) == (RunStatus.DONE, 2)
    assert done.state is not None
    assert done.state.data["output"] == "attempt 2 printed this\n"
    [first] = Attempt.objects.filter(run=run)
    assert (first.number, first.output) == (1, "attempt 1 printed this\n")

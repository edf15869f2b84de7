"""A round's finishes: the plain ones one ``UPDATE`` of the run table, every guarantee kept.

The reports are recorded by the worker's own :class:`~django_weft.engine.worker.reports.Reports`
after a real claim, on SQLite and PostgreSQL, with the statements captured.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_weft.engine.outcomes.finishing import FINISH_ROWS
from django_weft.engine.runs.claiming import claim, deployed_pairs
from django_weft.engine.worker.execution import Execution, report_of
from django_weft.engine.worker.reaping import finish_lost
from django_weft.engine.worker.reports import Reports
from django_weft.jobs.registry import registry
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.live.changes import Changes
from django_weft.models import Attempt, Document, Run, RunStatus, WorkerProcess
from django_weft.operations import start
from django_weft.signals import run_finished

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 3, 7, 11, 0, tzinfo=UTC)


def a_worker(name: str = "loop") -> WorkerProcess:
    return WorkerProcess.objects.create(hostname=name, pid=1, started_at=NOW, last_beat=NOW)


def claimed(worker: WorkerProcess, jobs: dict[str, int]) -> list[Execution]:
    """Start ``count`` runs of each job, claim them all on ``worker``."""
    for name, count in jobs.items():
        for _ in range(count):
            start(registry.get(name))
    deployed = deployed_pairs([registry.get(name) for name in jobs])
    runs = claim(deployed, limit=sum(jobs.values()), worker=worker, now=NOW, queues=None)
    assert len(runs) == sum(jobs.values())
    return [Execution(run=run, worker_id=worker.pk) for run in runs]


def run_updates(captured: CaptureQueriesContext) -> list[str]:
    """The captured statements that update the run table."""
    table = Run._meta.db_table
    return [
        query["sql"]
        for query in captured.captured_queries
        if query["sql"].lstrip().upper().startswith(("UPDATE", "WITH")) and table in query["sql"]
    ]


@pytest.fixture
def announced() -> Iterator[list[Run]]:
    """The runs ``run_finished`` announces while the test runs."""
    runs: list[Run] = []

    def receive(sender: object, run: Run, **kwargs: object) -> None:
        runs.append(run)

    run_finished.connect(receive)
    yield runs
    run_finished.disconnect(receive)


def test_a_round_of_plain_finishes_is_one_update(announced: list[Run]) -> None:
    """Twenty runs that end in one round are written by one statement, each with its own
    outcome, announced once each, and bumped to the next version."""
    worker = a_worker()
    executions = claimed(worker, {"tests.noop": 20})
    reports = Reports()
    for number, execution in enumerate(executions):
        if number % 2:
            reports.deliver(execution, report_of(execution, RunStatus.DONE, result=number))
        else:
            error = ErrorRecord("ValueError", f"bad {number}", "Traceback ...")
            reports.deliver(execution, report_of(execution, RunStatus.FAILED, error=error))
    with CaptureQueriesContext(connection) as captured:
        recorded = reports.record(NOW, Changes())
    assert recorded is not None
    assert len(recorded.done) == 20
    assert len(run_updates(captured)) == 1, run_updates(captured)
    assert len(reports) == 0
    for number, execution in enumerate(executions):
        run = Run.objects.get(pk=execution.run.pk)
        assert run.finished_at == NOW
        assert run.version == 3, "started, claimed, finished"
        if number % 2:
            assert (run.status, run.result, run.error_type) == (RunStatus.DONE, number, "")
        else:
            assert (run.status, run.result) == (RunStatus.FAILED, None)
            assert (run.error_type, run.error_message) == ("ValueError", f"bad {number}")
            assert run.error_traceback == "Traceback ..."
    assert sorted(run.pk for run in announced) == sorted(e.run.pk for e in executions)
    assert all(run.status in (RunStatus.DONE, RunStatus.FAILED) for run in announced)


def test_more_reports_than_one_statement_takes_are_split() -> None:
    """Past :data:`FINISH_ROWS` reports the round writes one statement per batch."""
    worker = a_worker()
    executions = claimed(worker, {"tests.noop": FINISH_ROWS + 3})
    reports = Reports()
    for execution in executions:
        reports.deliver(execution, report_of(execution, RunStatus.DONE, result="ok"))
    with CaptureQueriesContext(connection) as captured:
        reports.record(NOW, Changes())
    assert len(run_updates(captured)) == 2
    assert Run.objects.filter(status=RunStatus.DONE).count() == FINISH_ROWS + 3


def test_a_fenced_worker_finishes_nothing_and_the_others_still_do(
    announced: list[Run],
) -> None:
    """A worker declared dead whose runs another finished as lost: its reports are
    discarded in the same statement that records a live worker's."""
    fenced, alive = a_worker("fenced"), a_worker("alive")
    lost = claimed(fenced, {"tests.noop": 3})
    kept = claimed(alive, {"tests.noop": 3})
    WorkerProcess.objects.filter(pk=alive.pk).update(last_beat=NOW + timedelta(hours=1))
    finish_lost(
        now=NOW + timedelta(hours=1), silent_since=NOW + timedelta(minutes=1), changes=Changes()
    )
    assert Run.objects.filter(status=RunStatus.LOST).count() == 3
    announced.clear()
    reports = Reports()
    for execution in [*lost, *kept]:
        reports.deliver(execution, report_of(execution, RunStatus.DONE, result="late"))
    with CaptureQueriesContext(connection) as captured:
        recorded = reports.record(NOW + timedelta(hours=1), Changes())
    assert recorded is not None
    assert len(recorded.done) == 6, "discarded reports leave too"
    assert len(run_updates(captured)) == 1
    for execution in lost:
        run = Run.objects.get(pk=execution.run.pk)
        assert (run.status, run.result, run.error_type) == (RunStatus.LOST, None, "WorkerLost")
    for execution in kept:
        assert Run.objects.get(pk=execution.run.pk).status == RunStatus.DONE
    assert sorted(run.pk for run in announced) == sorted(e.run.pk for e in kept)


def test_hooks_and_retries_in_the_same_round_keep_their_own_finish() -> None:
    """Plain finishes share one statement; a retry puts its run back in the queue with
    its attempt kept, and a finish hook runs with the outcome, in the same round."""
    worker = a_worker()
    plain = claimed(worker, {"tests.noop": 5})
    (flaky,) = claimed(worker, {"tests.flaky": 1})
    reports = Reports()
    for execution in plain:
        reports.deliver(execution, report_of(execution, RunStatus.DONE, result="ok"))
    failure = ErrorRecord("ConnectionError", "could not reach the mail server", "")
    failed = partial(report_of, status=RunStatus.FAILED, error=failure, error_class=ConnectionError)
    reports.deliver(flaky, failed(flaky))
    with CaptureQueriesContext(connection) as captured:
        recorded = reports.record(NOW, Changes())
    assert recorded is not None
    assert recorded.retry_at == NOW + timedelta(minutes=1)
    assert len(run_updates(captured)) == 2, "the plain finishes' statement, then the retry's"
    retried = Run.objects.get(pk=flaky.run.pk)
    assert (retried.status, retried.attempt, retried.worker_id) == (RunStatus.QUEUED, 1, None)
    assert Attempt.objects.filter(run=retried, number=1, status=RunStatus.FAILED).exists()
    assert not Document.objects.filter(key=f"tests:finishes:{retried.pk}").exists()
    assert Run.objects.filter(status=RunStatus.DONE).count() == 5
    # The third attempt succeeds: the hook runs once, with the outcome.
    for attempt in (2, 3):
        (again,) = claim(
            deployed_pairs([registry.get("tests.flaky")]),
            limit=1,
            worker=worker,
            now=NOW + timedelta(hours=attempt),
            queues=None,
        )
        execution = Execution(run=again, worker_id=worker.pk)
        if attempt == 2:
            report = report_of(
                execution, RunStatus.FAILED, error=failure, error_class=ConnectionError
            )
        else:
            report = report_of(execution, RunStatus.DONE, result=3)
        reports.deliver(execution, report)
        reports.record(NOW + timedelta(hours=attempt), Changes())
    finished = Run.objects.get(pk=flaky.run.pk)
    assert (finished.status, finished.result, finished.attempt) == (RunStatus.DONE, 3, 3)
    counted = Document.objects.get(key=f"tests:finishes:{finished.pk}").data
    assert counted == {"count": 1, "kinds": ["done"]}

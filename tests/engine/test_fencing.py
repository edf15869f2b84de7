"""Fencing and outages in the finish, on any database (SQLite's rules unchanged).

A worker declared stopped claims nothing; marking a worker dead re-checks its last beat
in the statement that marks it; a database error inside a finish hook is an outage (the
finish is tried again and the hook commits once), while the hook's own exception is the
hook's failure. The same faults with real processes and a real server are in
tests/faults/test_liveness_faults.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, InterfaceError, OperationalError

from django_weft.engine.database.keepalives import client_keepalives, keepalive_settings
from django_weft.engine.database.outages import is_outage
from django_weft.engine.runs.claiming import claim, deployed_pairs
from django_weft.engine.worker.loop import Worker
from django_weft.engine.worker.reaping import mark_dead
from django_weft.jobs.context import RunContext
from django_weft.jobs.outcomes import FinishContext, Outcome
from django_weft.jobs.registry import Job, registry
from django_weft.models import Document, Run, RunStatus, WorkerProcess
from django_weft.operations import start
from django_weft.testing import DrivenClock

pytestmark = pytest.mark.django_db(transaction=True)

INLINE = "django_weft.engine.worker.executors.InlineExecutor"


def test_claim_by_a_worker_declared_stopped_takes_nothing(clock: DrivenClock) -> None:
    """The claim names the worker's live registration: once its row is stopped, the
    queued run stays queued; the same claim by a live worker takes it."""
    now = clock.now()
    job = registry.get("tests.noop")
    run = start(job)
    stopped = WorkerProcess.objects.create(
        hostname="h", pid=1, started_at=now, last_beat=now, stopped_at=now
    )
    live = WorkerProcess.objects.create(hostname="h", pid=2, started_at=now, last_beat=now)
    deployed = deployed_pairs([job])

    assert claim(deployed, limit=5, worker=stopped, now=now, queues=None) == []
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED
    (taken,) = claim(deployed, limit=5, worker=live, now=now, queues=None)
    assert (taken.pk, taken.worker_id) == (run.pk, live.pk)


def test_mark_dead_re_checks_the_last_beat_as_it_writes(clock: DrivenClock) -> None:
    """Only a worker silent since the moment is marked, at ``now``; one that beat after
    it (a beat that landed during the reap) is left alone, and so is one already stopped."""
    now = clock.now()
    silent_since = now - timedelta(seconds=30)
    silent = WorkerProcess.objects.create(
        hostname="h", pid=1, started_at=now, last_beat=silent_since - timedelta(seconds=1)
    )
    beat = WorkerProcess.objects.create(
        hostname="h", pid=2, started_at=now, last_beat=silent_since + timedelta(seconds=1)
    )
    earlier = now - timedelta(hours=1)
    gone = WorkerProcess.objects.create(
        hostname="h", pid=3, started_at=earlier, last_beat=earlier, stopped_at=earlier
    )

    assert mark_dead(now=now, silent_since=silent_since) == 1
    assert WorkerProcess.objects.get(pk=silent.pk).stopped_at == now
    assert WorkerProcess.objects.get(pk=beat.pk).stopped_at is None
    assert WorkerProcess.objects.get(pk=gone.pk).stopped_at == earlier


@pytest.mark.parametrize("lost_after", [1.5, 6, 30, 90])
def test_keepalives_give_up_on_a_vanished_host_within_the_lost_after_window(
    lost_after: float,
) -> None:
    """The liveness session's server-side keepalives drop a silent client about
    ``WEFT_LOST_AFTER`` after its last packet (whole seconds, so up to a few more), and
    unacknowledged data after the window; libpq gets the same on the client side."""
    settings = dict(keepalive_settings(lost_after))
    idle, interval = int(settings["tcp_keepalives_idle"]), int(settings["tcp_keepalives_interval"])
    silent_for = idle + int(settings["tcp_keepalives_count"]) * interval
    assert lost_after <= silent_for <= lost_after + 5
    assert int(settings["tcp_user_timeout"]) == math.ceil(lost_after * 1000)
    assert client_keepalives(list(settings.items())) == {
        "keepalives": 1,
        "keepalives_idle": settings["tcp_keepalives_idle"],
        "keepalives_interval": settings["tcp_keepalives_interval"],
        "keepalives_count": settings["tcp_keepalives_count"],
        "tcp_user_timeout": settings["tcp_user_timeout"],
    }


def test_is_outage_tells_the_database_failing_from_the_code_failing() -> None:
    """OperationalError and InterfaceError, also as the cause or context of the code's
    own exception (even one raised ``from None``: the database still failed under it),
    are outages; IntegrityError and plain exceptions are not."""

    def raised_from(cause: BaseException) -> ValueError:
        try:
            raise ValueError("could not save") from cause
        except ValueError as error:
            return error

    def raised_while_handling(context: BaseException) -> RuntimeError:
        try:
            try:
                raise context
            except type(context):
                raise RuntimeError("gave up") from None
        except RuntimeError as error:
            return error

    disk_full = OperationalError('could not extend file "base/1/2": No space left on device')
    assert is_outage(disk_full)
    assert is_outage(InterfaceError("connection already closed"))
    assert is_outage(raised_from(disk_full))
    assert is_outage(raised_while_handling(disk_full)), "even hidden by from None"
    assert not is_outage(IntegrityError("duplicate key value violates unique constraint"))
    assert not is_outage(raised_from(IntegrityError("duplicate key")))
    assert not is_outage(ValueError("the finish hook broke"))


#: How often the hook of ``tests.disk_full_once`` was called, and whether it should fail.
HOOK_CALLS: dict[str, Any] = {}


@pytest.fixture
def hook_job() -> Iterator[Job]:
    """A job whose finish hook writes a document, failing first with ``HOOK_CALLS['raise']``."""

    def returns(ctx: RunContext) -> str:
        return "real outcome"

    def hook(outcome: Outcome, tx: FinishContext) -> None:
        HOOK_CALLS["calls"] += 1
        document = tx.document("tests:hook_outage", schema="tests.hook", initial=dict)
        tx.change(document, lambda data: data.update(kind=outcome.kind, result=outcome.result))
        failure = HOOK_CALLS.pop("raise", None)
        if failure is not None:
            raise failure

    HOOK_CALLS.clear()
    HOOK_CALLS["calls"] = 0
    job = Job(func=returns, name="tests.hook_outage")
    job.finish(hook)
    registered = registry.register(job)
    yield registered
    registry.unregister(registered.name)


def test_database_error_in_a_finish_hook_is_an_outage_retried_with_the_real_outcome(
    clock: DrivenClock, hook_job: Job
) -> None:
    """A disk-full error in the hook's writes rolls the finish back and keeps the report;
    once the database takes it, the run is done with its result, and the hook's writes
    commit once."""
    HOOK_CALLS["raise"] = OperationalError(
        'could not extend file "base/16384/16400": No space left on device'
    )
    run = start(hook_job)
    worker = Worker(clock=clock, executor=INLINE, schedules=False)
    worker.start()
    try:
        worker.tick()
        assert worker.outage.ongoing, "the finish step failed as an outage"
        assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
        assert not Document.objects.filter(key="tests:hook_outage").exists()
        assert len(worker.reports) == 1, "the outcome waits in memory"

        # The back-off after one failure is a fraction of a second, in real seconds.
        time.sleep(worker.outage.wait())
        worker.tick()
    finally:
        worker.close()
    done = Run.objects.get(pk=run.pk)
    assert (done.status, done.result, done.error_message) == (RunStatus.DONE, "real outcome", "")
    assert Document.objects.get(key="tests:hook_outage").data == {
        "kind": "done",
        "result": "real outcome",
    }
    assert HOOK_CALLS["calls"] == 2, "called again for the retried finish, committed once"


def test_the_hooks_own_exception_is_still_the_hooks_failure(
    clock: DrivenClock, hook_job: Job
) -> None:
    """An IntegrityError of the hook's own making fails the run as before: no outage."""
    HOOK_CALLS["raise"] = IntegrityError("duplicate key value violates unique constraint")
    run = start(hook_job)
    worker = Worker(clock=clock, executor=INLINE, schedules=False)
    worker.start()
    try:
        worker.tick()
        assert not worker.outage.ongoing
    finally:
        worker.close()
    failed = Run.objects.get(pk=run.pk)
    assert failed.status == RunStatus.FAILED
    assert failed.error_message == (
        "finish hook failed: IntegrityError: duplicate key value violates unique constraint"
    )
    assert not Document.objects.filter(key="tests:hook_outage").exists()

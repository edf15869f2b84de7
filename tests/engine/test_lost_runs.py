"""A worker that dies mid-run: another worker finishes its run as lost, exactly once."""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest
from django.utils import timezone

from django_weft.engine.worker.reaping import finish_lost
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.models import Document, Run, RunStatus, WorkerProcess
from django_weft.operations import start
from tests.processes import runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

FAST = {"WEFT_TEST_HEARTBEAT_INTERVAL": "0.2", "WEFT_TEST_LOST_AFTER": "1.5"}


@pytest.mark.slow
def test_lost_run_of_a_killed_worker_is_finished_once_by_another() -> None:
    """SIGKILL mid-run: a surviving worker finishes the run lost, never before the lost-after
    window (how long after it depends on how busy the machine is); one finish."""
    run = start(registry.get("tests.watched_sleep"), {"seconds": 600})
    doomed = runjobs(extra_env=FAST)
    survivors = []
    try:
        wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, what="the claim")
        doomed.send_signal(signal.SIGKILL)
        doomed.finish()
        dead = WorkerProcess.objects.get(pk=Run.objects.get(pk=run.pk).worker_id)
        assert dead.stopped_at is None, "a killed worker could not say goodbye"

        survivors += [runjobs(extra_env=FAST), runjobs(extra_env=FAST)]
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="the lost run")
    finally:
        for survivor in survivors:
            survivor.send_signal(signal.SIGTERM)
            survivor.finish()

    lost = Run.objects.get(pk=run.pk)
    assert lost.status == RunStatus.LOST
    assert lost.error_type == "WorkerLost"
    assert lost.args == {"seconds": 600.0}
    silence = lost.finished_at - dead.last_beat
    assert silence >= timedelta(seconds=1.5)
    finishes = Document.objects.get(key=f"tests:finishes:{run.pk}").data
    assert finishes == {"count": 1, "kinds": ["lost"]}, "the finish hook ran exactly once"


def test_finish_lost_spares_workers_that_beat() -> None:
    """Runs of a worker whose heartbeat is recent are left alone; silent ones are lost."""
    now = timezone.now()
    alive = WorkerProcess.objects.create(hostname="a", pid=1, started_at=now, last_beat=now)
    silent = WorkerProcess.objects.create(
        hostname="b", pid=2, started_at=now, last_beat=now - timedelta(minutes=5)
    )
    job = registry.get("tests.sleep")
    mine = start(job, {"seconds": 1})
    theirs = start(job, {"seconds": 1})
    Run.objects.filter(pk=mine.pk).update(status=RunStatus.RUNNING, worker=alive)
    Run.objects.filter(pk=theirs.pk).update(status=RunStatus.RUNNING, worker=silent)

    assert finish_lost(now=now, silent_since=now - timedelta(seconds=30), changes=Changes()) == 1
    assert Run.objects.get(pk=mine.pk).status == RunStatus.RUNNING
    assert Run.objects.get(pk=theirs.pk).status == RunStatus.LOST
    assert WorkerProcess.objects.get(pk=silent.pk).stopped_at == now
    assert finish_lost(now=now, silent_since=now - timedelta(seconds=30), changes=Changes()) == 0


def test_finish_lost_takes_runs_of_stopped_or_vanished_workers() -> None:
    """A running run whose worker row says stopped, or is gone, is finished lost."""
    now = timezone.now()
    stopped = WorkerProcess.objects.create(
        hostname="c", pid=3, started_at=now, last_beat=now, stopped_at=now
    )
    job = registry.get("tests.sleep")
    of_stopped, of_nobody = start(job, {"seconds": 1}), start(job, {"seconds": 1})
    Run.objects.filter(pk=of_stopped.pk).update(status=RunStatus.RUNNING, worker=stopped)
    Run.objects.filter(pk=of_nobody.pk).update(status=RunStatus.RUNNING, worker=None)
    assert finish_lost(now=now, silent_since=now - timedelta(seconds=30), changes=Changes()) == 2
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.LOST}

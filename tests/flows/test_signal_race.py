"""A signal sent at the very moment its run begins to wait is never lost: the run ends
up queued to receive it, whichever of the two transactions commits first (two threads,
each on its own connection; on PostgreSQL they truly race)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from django_weft.engine.flows.signals import send_signal
from django_weft.engine.outcomes.finishing import AttemptReport
from django_weft.engine.outcomes.suspending import suspend
from django_weft.engine.runs.claiming import claim, deployed_pairs
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus, Signal, WorkerProcess
from django_weft.operations import start
from tests.threads import together

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 20


def test_signal_racing_the_wait_always_wakes_the_run() -> None:
    job = registry.get("tests.flows.approval")
    now = timezone.now()
    worker = WorkerProcess.objects.create(hostname="race", pid=1, started_at=now, last_beat=now)
    runs = [start(job) for _ in range(ROUNDS)]
    claimed = claim(deployed_pairs([job]), limit=ROUNDS, worker=worker, now=now, queues=None)
    assert len(claimed) == ROUNDS
    for run in claimed:
        report = AttemptReport(
            run_id=run.pk,
            job=run.job,
            worker_id=worker.pk,
            attempt=run.attempt,
            started_at=run.started_at,
            status=RunStatus.WAITING,
            awaiting="approval",
        )
        outcomes = together(
            lambda report=report: suspend(report, now=timezone.now(), changes=Changes()),
            lambda run=run: send_signal(
                run.pk, "approval", "go", sender=None, now=timezone.now(), changes=Changes()
            ),
        )
        assert not any(isinstance(outcome, Exception) for outcome in outcomes), outcomes
    after = Run.objects.filter(pk__in=[run.pk for run in runs])
    assert sorted(set(after.values_list("status", flat=True))) == [RunStatus.QUEUED]
    assert set(after.values_list("resuming", flat=True)) == {True}
    assert Signal.objects.filter(received_at__isnull=True).count() == ROUNDS

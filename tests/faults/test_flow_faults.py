"""Durable steps and waits through what production does to them, with real ``runjobs``
processes on a throwaway PostgreSQL: a worker SIGKILLed after a recorded step, a waiting
run and its signal through a database restart."""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from django_weft.jobs.registry import registry
from django_weft.models import Run, RunStatus, Signal
from django_weft.operations import start
from tests.faults.conftest import reachable
from tests.faults.servers import PostgresCluster
from tests.flows.jobs import calls
from tests.processes import Runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_run_killed_after_a_recorded_step_does_not_redo_it(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """The worker dies (SIGKILL) after the charge was recorded; another worker finishes
    the run as lost and retries it, and the retry reads the charge instead of making it."""
    run = start(registry.get("tests.flows.charge_then_hang"))
    doomed = start_runjobs("--concurrency", "1")
    wait_for(lambda: calls(run.pk).get("charge") == 1, what="the charge to be recorded")
    doomed.send_signal(signal.SIGKILL)
    doomed.finish()
    survivor = start_runjobs()
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=120, what="the retry")
    done = Run.objects.get(pk=run.pk)
    assert (done.status, done.result) == (RunStatus.DONE, {"charge": 1, "attempt": 2})
    assert calls(run.pk) == {"charge": 1}, "charged once"
    assert survivor.poll() is None


def test_waiting_run_and_its_signal_through_a_database_restart(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs]
) -> None:
    """A run waits through a restart of its database, holding no worker; a signal sent
    while the database is down is refused with a clear 503 and nothing half-written;
    sent again once it is back, it wakes the run, which gets its payload."""
    user = get_user_model().objects.create_user("approver")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    run = start(registry.get("tests.flows.approval"), owner=user)
    worker = start_runjobs("--concurrency", "1")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.WAITING, what="the wait")
    client = Client()
    client.force_login(user)
    signal_url = f"/api/weft/runs/{run.pk}/signal/"
    body = {"name": "approval", "payload": {"by": "ada"}}

    postgres.stop()
    try:
        refused = client.post(signal_url, body, content_type="application/json")
    finally:
        postgres.start()
    assert refused.status_code == 503, refused.content
    wait_for(reachable, what="this process to reach the database again")
    assert not Signal.objects.exists(), "nothing half-written"
    assert Run.objects.get(pk=run.pk).status == RunStatus.WAITING

    sent = client.post(signal_url, body, content_type="application/json")
    assert sent.status_code == 202, sent.content
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, timeout=120, what="the run to go on")
    done = Run.objects.get(pk=run.pk)
    assert (done.status, done.result, done.attempt) == (RunStatus.DONE, {"by": "ada"}, 1), (
        done.error_message
    )
    assert calls(run.pk) == {"body": 2}
    assert worker.poll() is None, worker.output()

"""A queued run's page says what keeps it from being claimed: a paused queue, a delay
(a retry's, a task's ``run_after``), no worker running, every running worker quiet; and
says nothing of the kind once the run runs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from django_weft.models import PausedQueue, Run, RunStatus, WorkerProcess
from django_weft.operations import start
from tests.jobs import noop

pytestmark = pytest.mark.django_db


def stalls_on_page(client: Client, run: Run) -> list[str]:
    page = client.get(reverse("admin:django_weft_run_change", args=[run.pk])).content.decode()
    return [part.split("</p>")[0] for part in page.split('class="weft-waiting weft-stalled">')[1:]]


def worker(*, quiet: bool = False, silent_for: timedelta = timedelta(0)) -> WorkerProcess:
    beat = timezone.now() - silent_for
    return WorkerProcess.objects.create(
        hostname="web-1", pid=42, started_at=beat, last_beat=beat, quiet=quiet
    )


def test_run_page_says_no_worker_runs_or_every_worker_is_quiet(admin_client: Client) -> None:
    run = start(noop)
    worker(silent_for=timedelta(hours=1))  # silent long past WEFT_LOST_AFTER: not running
    assert stalls_on_page(admin_client, run) == [
        "No worker is running: start one with manage.py runjobs."
    ]
    quiet = worker(quiet=True)
    assert stalls_on_page(admin_client, run) == [
        "Every running worker is quiet: resume one, or start another."
    ]
    WorkerProcess.objects.filter(pk=quiet.pk).update(quiet=False)
    assert stalls_on_page(admin_client, run) == []


def test_run_page_says_its_queue_is_paused_and_when_it_may_begin(admin_client: Client) -> None:
    worker()
    run = start(noop)
    later = timezone.now() + timedelta(hours=2)
    Run.objects.filter(pk=run.pk).update(retry_at=later, run_after=later)
    PausedQueue.objects.create(queue=run.queue, paused_at=timezone.now())
    said = stalls_on_page(admin_client, run)
    assert said[0] == "Its queue default is paused: no worker claims its runs until it is resumed."
    assert said[1].startswith("Its retry waits until ")
    assert said[2].startswith("It may not begin before ")
    assert len(said) == 3
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    assert stalls_on_page(admin_client, run) == []

"""Quieting a worker: it claims no new runs and fires no schedules, finishes what it
holds, keeps beating, and takes work again once resumed; who may, and the audit trail.
Through the service layer, on the driven clock, and from the console to a real
``runjobs`` process."""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission, User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from django_weft import operations
from django_weft.conf import weft_settings
from django_weft.exceptions import Forbidden
from django_weft.jobs.registry import registry
from django_weft.models import AuditRecord, Run, RunStatus, Schedule, WorkerProcess
from django_weft.testing import Rehearsal
from tests.processes import runjobs, wait_for


def operator(name: str = "otto", *, may_quiet: bool = True) -> User:
    made: User = get_user_model().objects.create_user(name, is_staff=True)
    codenames = ["view_workerprocess", *(["quiet_workerprocess"] if may_quiet else [])]
    made.user_permissions.set(
        Permission.objects.filter(content_type__app_label="django_weft", codename__in=codenames)
    )
    return get_user_model().objects.get(pk=made.pk)


def beat(rehearsal: Rehearsal) -> None:
    """Let a heartbeat interval pass and turn a round: the worker beats, and reads its row."""
    rehearsal.advance(timedelta(seconds=weft_settings.HEARTBEAT_INTERVAL))
    rehearsal.worker.tick()


def test_quiet_worker_takes_no_new_work_until_resumed(rehearsal: Rehearsal) -> None:
    """Quiet at its next beat: a run started meanwhile stays queued and a due schedule
    is not fired; resumed, it claims the run and fires the schedule's next slot, once."""
    rehearsal.advance(timedelta(0))
    worker = WorkerProcess.objects.get()
    otto = operator()
    assert operations.quiet_worker_for(otto, worker.pk) is True
    beat(rehearsal)
    waiting = operations.start(registry.get("tests.noop"))
    schedule = Schedule.objects.create(
        name="every minute", job="tests.noop", every=timedelta(minutes=1)
    )
    rehearsal.advance(timedelta(minutes=3))
    assert Run.objects.get(pk=waiting.pk).status == RunStatus.QUEUED
    assert not Run.objects.filter(schedule=schedule).exists()

    assert operations.quiet_worker_for(otto, worker.pk, quiet=False) is True
    beat(rehearsal)
    assert Run.objects.get(pk=waiting.pk).status == RunStatus.DONE
    rehearsal.advance(timedelta(minutes=1))
    assert Run.objects.filter(schedule=schedule).count() == 1, "the next slot, once"


@pytest.mark.django_db
def test_quiet_worker_needs_the_permission_and_is_on_record() -> None:
    """Without ``quiet_workerprocess`` the call is refused and nothing changes; with it,
    each change is one audit record, and asking again changes and records nothing. A
    stopped worker is refused by name."""
    worker = WorkerProcess.objects.create(
        hostname="web-1", pid=42, started_at="2026-12-07T10:00Z", last_beat="2026-12-07T10:00Z"
    )
    with pytest.raises(Forbidden, match="quiet_workerprocess"):
        operations.quiet_worker_for(operator("vic", may_quiet=False), worker.pk)
    assert WorkerProcess.objects.get().quiet is False
    otto = operator()
    assert operations.quiet_worker_for(otto, worker.pk) is True
    assert operations.quiet_worker_for(otto, worker.pk) is False
    assert operations.quiet_worker_for(otto, worker.pk, quiet=False) is True
    actions = list(AuditRecord.objects.order_by("pk").values_list("action", "object_id", "actor"))
    assert actions == [
        ("worker_quiet", str(worker.pk), otto.pk),
        ("worker_resume", str(worker.pk), otto.pk),
    ]
    WorkerProcess.objects.filter(pk=worker.pk).update(stopped_at="2026-12-07T11:00Z")
    with pytest.raises(ValidationError, match="web-1:42 has stopped"):
        operations.quiet_worker_for(otto, worker.pk)


@pytest.mark.django_db
def test_worker_page_offers_quiet_only_to_those_who_may() -> None:
    """The button shows on a running worker's page to ``quiet_workerprocess`` only; a POST
    without it is refused with a message and changes nothing."""
    worker = WorkerProcess.objects.create(
        hostname="web-1", pid=42, started_at="2026-12-07T10:00Z", last_beat="2026-12-07T10:00Z"
    )
    page = reverse("admin:django_weft_workerprocess_change", args=[worker.pk])
    quiet = reverse("admin:django_weft_workerprocess_quiet", args=[worker.pk])
    viewer = Client()
    viewer.force_login(operator("vic", may_quiet=False))
    assert quiet not in viewer.get(page).content.decode()
    refused = viewer.post(quiet, follow=True).content.decode()
    assert "needs django_weft.quiet_workerprocess" in refused
    assert WorkerProcess.objects.get().quiet is False
    otto = Client()
    otto.force_login(operator())
    assert quiet in otto.get(page).content.decode()
    said = otto.post(quiet, follow=True).content.decode()
    assert "Quieted: at its next heartbeat" in said
    assert WorkerProcess.objects.get().quiet is True
    assert reverse("admin:django_weft_workerprocess_resume", args=[worker.pk]) in said


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_runjobs_quieted_from_the_console_finishes_its_run_and_claims_no_other() -> None:
    """A real ``runjobs`` quieted from its console page logs it at its next beat, lets
    the run it holds end, beats on without claiming the run started meanwhile, and
    claims it once resumed."""
    held = operations.start(registry.get("tests.sleep"), {"seconds": 600})
    process = runjobs("--concurrency", "1")
    try:
        wait_for(lambda: Run.objects.get(pk=held.pk).status == RunStatus.RUNNING, what="the run")
        worker = WorkerProcess.objects.get(stopped_at__isnull=True)
        console = Client()
        console.force_login(operator())
        console.post(reverse("admin:django_weft_workerprocess_quiet", args=[worker.pk]))
        wait_for(lambda: process.printed("was quieted"), what="the worker to hear it")
        waiting = operations.start(registry.get("tests.sleep"), {"seconds": 0})
        operations.abort(Run.objects.get(pk=held.pk))
        wait_for(lambda: Run.objects.get(pk=held.pk).status == RunStatus.ABORTED, what="the end")
        ended = Run.objects.get(pk=held.pk).finished_at
        assert ended is not None
        wait_for(
            lambda: WorkerProcess.objects.get(pk=worker.pk).last_beat > ended,
            what="a beat after the run ended",
        )
        assert Run.objects.get(pk=waiting.pk).status == RunStatus.QUEUED
        console.post(reverse("admin:django_weft_workerprocess_resume", args=[worker.pk]))
        wait_for(lambda: Run.objects.get(pk=waiting.pk).status == RunStatus.DONE, what="the claim")
        assert process.printed("was resumed")
        process.send_signal(signal.SIGTERM)
    finally:
        output = process.finish()
    assert process.returncode == 0, output


@pytest.mark.django_db
def test_overview_and_worker_list_mark_a_quiet_worker(admin_client: Client) -> None:
    """The overview's Workers table marks a quiet worker, and the worker list filters by it."""
    WorkerProcess.objects.create(
        hostname="web-1", pid=42, started_at="2026-12-07T10:00Z", last_beat="2026-12-07T10:00Z"
    )
    quiet = WorkerProcess.objects.create(
        hostname="web-2",
        pid=43,
        started_at="2026-12-07T10:00Z",
        last_beat="2026-12-07T10:00Z",
        quiet=True,
    )
    overview = admin_client.get(reverse("admin:django_weft_overview_changelist")).content.decode()
    workers = overview.split('id="weft-workers"')[1].split("</table>")[0]
    rows = {row.split("<br>")[0].split(">")[-1]: row for row in workers.split("<tr")[2:]}
    assert ">quiet</span>" in rows["web-2:43"]
    assert ">quiet</span>" not in rows["web-1:42"]
    listed = admin_client.get(
        reverse("admin:django_weft_workerprocess_changelist"), {"quiet__exact": "1"}
    ).content.decode()
    assert str(quiet) in listed
    assert "web-1:42" not in listed

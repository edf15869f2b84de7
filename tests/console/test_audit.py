"""The audit trail in the console: the list of records, read-only for everyone and shown
to those with ``view_auditrecord``; a run's History after an abort; who paused a queue;
worker processes that nobody deletes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from django_weft import operations
from django_weft.models import AuditRecord, Run, RunStatus, Schedule, WorkerProcess

pytestmark = pytest.mark.django_db

RECORDS = "admin:django_weft_auditrecord_changelist"


def staff(username: str, *codenames: str) -> Any:
    user = get_user_model().objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return get_user_model().objects.get(pk=user.pk)  # a fresh permission cache


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root() -> Any:
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw")


@pytest.fixture
def auditor() -> Any:
    """Staff who may read the audit trail and nothing else."""
    return staff("auditor", "view_auditrecord")


@pytest.fixture
def trail(root: Any) -> dict[str, Any]:
    """An abort by root through the admin, a pause by a queue keeper through Python."""
    run = operations.start("tests.noop")
    client_of(root).post(f"/admin/django_weft/run/{run.pk}/abort/")
    keeper = staff("keeper", "pause_queue")
    operations.pause_queue_for(keeper, "mail")
    return {"run": run, "keeper": keeper}


def listed(client: Client, **query: str) -> str:
    response = client.get(reverse(RECORDS), query)
    assert response.status_code == 200
    return response.content.decode()


def test_console_audit_list_shows_who_did_what_through_which_entry_point(
    auditor: Any, trail: dict[str, Any]
) -> None:
    """Each record: when, who, the action, the object (linked to its page), the text and
    the entry point."""
    run = trail["run"]
    page = listed(client_of(auditor))
    for text in ("root", "abort a run", "Requested an abort", "the admin"):
        assert text in page
    for text in ("keeper", "pause a queue", "queue mail", "Python code"):
        assert text in page
    assert reverse("admin:django_weft_run_change", args=[run.pk]) in page
    assert f"run {str(run.pk)[:8]}" in page


def test_console_audit_list_filters_by_user_action_object_type_and_time(
    auditor: Any, trail: dict[str, Any]
) -> None:
    """The filters narrow the list by user, action, object type, entry point and day;
    the search finds an object by its id."""
    client, run, keeper = client_of(auditor), trail["run"], trail["keeper"]
    by_keeper = listed(client, actor__id__exact=str(keeper.pk))
    assert "pause a queue" in by_keeper
    assert "Requested an abort" not in by_keeper
    aborts = listed(client, action__exact="abort")
    assert "Requested an abort" in aborts
    assert "queue mail" not in aborts
    assert "queue mail" in listed(client, object_type="queue")
    assert "queue mail" in listed(client, via__exact="python")
    today = timezone.now()
    on_the_day = listed(
        client, at__year=str(today.year), at__month=str(today.month), at__day=str(today.day)
    )
    assert "queue mail" in on_the_day
    searched = listed(client, q=str(run.pk)[:13])
    assert "Requested an abort" in searched
    assert "queue mail" not in searched
    page = listed(client)
    for name in ("actor__id__exact=", "action__exact=", "object_type=", "via__exact="):
        assert f"?{name}" in page, f"the {name} filter is offered"


def test_console_audit_list_needs_the_view_permission(trail: dict[str, Any]) -> None:
    """Staff without view_auditrecord do not see the trail, even with every run permission."""
    operator = staff("operator", "view_run", "change_run", "view_schedule", "change_schedule")
    assert client_of(operator).get(reverse(RECORDS)).status_code == 403


def test_console_audit_records_are_read_only_even_to_a_superuser(
    root: Any, trail: dict[str, Any]
) -> None:
    """No add, no edit, no delete, no actions: a record is never changed after the fact."""
    client = client_of(root)
    record = AuditRecord.objects.get(action="abort")
    before = AuditRecord.objects.values().get(pk=record.pk)
    assert client.get(reverse("admin:django_weft_auditrecord_add")).status_code == 403
    change = reverse("admin:django_weft_auditrecord_change", args=[record.pk])
    page = client.get(change)
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert client.post(change, {"text": "nothing happened"}).status_code == 403
    delete = reverse("admin:django_weft_auditrecord_delete", args=[record.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    listing = client.get(reverse(RECORDS)).content.decode()
    assert "delete_selected" not in listing
    client.post(
        reverse(RECORDS),
        {"action": "delete_selected", "_selected_action": [record.pk], "post": "yes"},
    )
    assert AuditRecord.objects.values().get(pk=record.pk) == before


def test_console_run_history_lists_the_abort(root: Any, trail: dict[str, Any]) -> None:
    """After an admin aborts a run, the run's History page says who asked and how."""
    run = trail["run"]
    assert Run.objects.get(pk=run.pk).status == RunStatus.ABORTED
    page = client_of(root).get(reverse("admin:django_weft_run_history", args=[run.pk]))
    text = page.content.decode()
    assert "Requested an abort (through the admin)." in text
    assert "root" in text
    assert "have a change history" not in text


def test_console_schedule_history_has_each_save_once(root: Any) -> None:
    """A schedule saved in the admin: one history entry per save, from the service layer."""
    schedule = Schedule.objects.create(name="hourly", job="tests.noop", every=timedelta(hours=1))
    client_of(root).post(f"/admin/django_weft/schedule/{schedule.pk}/pause/")
    page = client_of(root).get(reverse("admin:django_weft_schedule_history", args=[schedule.pk]))
    assert page.content.decode().count("Disabled (through the admin).") == 1


def test_console_overview_says_who_paused_a_queue(trail: dict[str, Any]) -> None:
    """The overview's queue table says who paused a queue, and for how long."""
    viewer = staff("viewer", "view_run")
    page = client_of(viewer).get("/admin/django_weft/overview/").content.decode()
    row = page[page.index('<tr data-queue="mail">') :]
    row = row[: row.index("</tr>")]
    assert "paused" in row
    assert "by keeper, for" in row


def test_console_worker_processes_cannot_be_deleted(root: Any) -> None:
    """Worker rows are read-only, as the docs say: no delete action, no delete page."""
    now = timezone.now()
    worker = WorkerProcess.objects.create(hostname="h", pid=1, started_at=now, last_beat=now)
    client = client_of(root)
    listing = reverse("admin:django_weft_workerprocess_changelist")
    assert "delete_selected" not in client.get(listing).content.decode()
    client.post(
        listing, {"action": "delete_selected", "_selected_action": [worker.pk], "post": "yes"}
    )
    delete = reverse("admin:django_weft_workerprocess_delete", args=[worker.pk])
    assert client.get(delete).status_code == 403
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert WorkerProcess.objects.filter(pk=worker.pk).exists()

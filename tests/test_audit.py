"""The audit trail: every operator action is on record, through whichever entry point.

Each action (abort through the admin, the API, the socket and Python; every other action
once) leaves one audit record saying who, when (the installed clock's now), what and
through which entry point, and one entry in the object's admin history (``LogEntry``)
where it has one. A refused action, one rolled back, and one that changes nothing leave
none. ``prunejobs`` deletes the trail with the runs of the same age.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from rest_framework.test import APIClient

from django_weft import operations
from django_weft.engine.history.pruning import prune
from django_weft.exceptions import Forbidden
from django_weft.models import AuditRecord, Module, PausedQueue, Run, RunStatus, Schedule
from django_weft.sockets.consumers import RunsConsumer
from django_weft.testing import DrivenClock
from django_weft.timing import clocks
from tests import sandbox_helpers  # noqa: F401  (registers the host function tests.add)
from tests.patience import EVENTUALLY

pytestmark = pytest.mark.django_db(transaction=True)

#: Long before the test runs, so that a record stamped with the machine's time would show.
DRIVEN = datetime(2021, 6, 1, 9, 30, tzinfo=UTC)
SCHEDULES = "/admin/django_weft/schedule/"


@pytest.fixture(autouse=True)
def driven() -> Iterator[DrivenClock]:
    """A driven clock installed for the process: every record is stamped with its now."""
    clock = DrivenClock(DRIVEN)
    clocks.install_clock(clock)
    yield clock
    clocks.install_clock(None)


def make_user(name: str, *codenames: str, staff: bool = True) -> Any:
    user = get_user_model().objects.create_user(name, password="pw", is_staff=staff)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return get_user_model().objects.get(pk=user.pk)  # a fresh permission cache


@pytest.fixture
def operator() -> Any:
    return make_user(
        "operator",
        "view_run",
        "add_run",
        "change_run",
        "view_schedule",
        "add_schedule",
        "change_schedule",
        "delete_schedule",
        "pause_queue",
    )


@pytest.fixture
def viewer() -> Any:
    return make_user("viewer", "view_run", "view_schedule")


@pytest.fixture
def run() -> Run:
    return operations.start("tests.noop")


@pytest.fixture
def schedule() -> Schedule:
    return Schedule.objects.create(
        name="nightly", job="tests.noop", cron="0 3 * * *", timezone="UTC"
    )


def admin_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_of(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def the_record() -> AuditRecord:
    """The one audit record written (fails when there are none or several)."""
    (only,) = AuditRecord.objects.all()
    return only


def history_of(obj: Any) -> list[tuple[int, str, str]]:
    """The object's admin history: (flag, user, message) of each entry, oldest first."""
    entries = LogEntry.objects.filter(object_id=str(obj.pk)).order_by("action_time", "pk")
    return [(e.action_flag, e.user.get_username(), e.change_message) for e in entries]


def assert_nothing_on_record() -> None:
    assert not AuditRecord.objects.exists()
    assert not LogEntry.objects.exists()


# -- abort, through each entry point -----------------------------------------------------------


def abort_through_admin_button(user: Any, run: Run) -> None:
    response = admin_of(user).post(f"/admin/django_weft/run/{run.pk}/abort/")
    assert response.status_code == 302


def abort_through_admin_action(user: Any, run: Run) -> None:
    selected = {"action": "abort_action", "_selected_action": [str(run.pk)]}
    response = admin_of(user).post("/admin/django_weft/run/", selected)
    assert response.status_code == 302


def abort_through_api(user: Any, run: Run) -> None:
    assert api_of(user).post(f"/api/weft/runs/{run.pk}/abort/").status_code == 202


def abort_through_socket(user: Any, run: Run) -> None:
    reply = async_to_sync(_socket_frame)(user, {"type": "abort", "run": str(run.pk)})
    assert reply["type"] == "abort_requested", reply


def abort_through_python(user: Any, run: Run) -> None:
    assert operations.abort_for(user, run) is True


async def _socket_frame(user: Any, frame: dict[str, Any]) -> dict[str, Any]:
    """Send ``frame`` on a socket signed in as ``user``; the reply to it (or an error)."""
    communicator = WebsocketCommunicator(RunsConsumer.as_asgi(), "/ws/weft/runs/")
    communicator.scope["user"] = user
    try:
        connected, _ = await communicator.connect(timeout=EVENTUALLY)
        assert connected
        snapshot = await communicator.receive_json_from(timeout=EVENTUALLY)
        assert snapshot["type"] == "snapshot", snapshot
        await communicator.send_json_to(frame)
        while True:
            reply: dict[str, Any] = await communicator.receive_json_from(timeout=EVENTUALLY)
            if reply["type"] not in ("run", "state", "live"):
                return reply
    finally:
        await communicator.disconnect()


ABORTS = {
    "admin-button": (abort_through_admin_button, "admin", "the admin"),
    "admin-action": (abort_through_admin_action, "admin", "the admin"),
    "api": (abort_through_api, "api", "the REST API"),
    "socket": (abort_through_socket, "socket", "the live socket"),
    "python": (abort_through_python, "python", "Python code"),
}


@pytest.mark.parametrize("entry", ABORTS)
def test_audit_abort_is_on_record_through_each_entry_point(
    entry: str, operator: Any, run: Run
) -> None:
    """An abort says who asked, when, for which run and through which entry point, in the
    weft record and in the run's admin history."""
    abort, via, said = ABORTS[entry]
    abort(operator, run)
    assert Run.objects.get(pk=run.pk).status == RunStatus.ABORTED
    record = the_record()
    assert (record.actor_id, record.actor_name, record.at) == (operator.pk, "operator", DRIVEN)
    assert (record.action, record.object_type, record.object_id) == ("abort", "run", str(run.pk))
    assert (record.text, record.via) == ("Requested an abort", via)
    assert history_of(run) == [(CHANGE, "operator", f"Requested an abort (through {said}).")]
    assert LogEntry.objects.get().action_time == DRIVEN


def test_audit_abort_asked_again_is_not_recorded_again(operator: Any) -> None:
    """An abort that stands already changes nothing: one record, not two."""
    running = operations.start("tests.noop")
    Run.objects.filter(pk=running.pk).update(status=RunStatus.RUNNING)
    running.refresh_from_db()
    assert operations.abort_for(operator, running) is True
    assert operations.abort_for(operator, running) is False
    assert AuditRecord.objects.filter(action="abort").count() == 1


# -- every other action, once ------------------------------------------------------------------


def test_audit_start_through_python_is_on_record_once_per_run(operator: Any) -> None:
    """``start_for`` records the new run; a resent key returns that run, recording nothing."""
    asked = operations.parse_start(operator, {"job": "tests.noop"}, key="k-1")
    run, created = operations.start_for(operator, asked)
    assert created
    again, created = operations.start_for(operator, asked)
    assert (again.pk, created) == (run.pk, False)
    record = the_record()
    assert (record.action, record.object_id, record.via) == ("start", str(run.pk), "python")
    assert history_of(run) == [(ADDITION, "operator", "Started (through Python code).")]


def test_audit_start_through_the_socket_is_on_record(operator: Any) -> None:
    """A start frame is recorded as coming through the socket."""
    reply = async_to_sync(_socket_frame)(
        operator, {"type": "start", "job": "tests.noop", "request_id": "r-1"}
    )
    assert reply["type"] == "started", reply
    record = the_record()
    assert (record.action, record.object_id, record.via) == ("start", reply["run"]["id"], "socket")


def test_audit_retry_through_the_admin_names_the_new_run(operator: Any, run: Run) -> None:
    """A retry is recorded on the run retried, naming the run it started; one record."""
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)
    response = admin_of(operator).post(f"/admin/django_weft/run/{run.pk}/retry/")
    assert response.status_code == 302
    retried = Run.objects.exclude(pk=run.pk).get()
    record = the_record()
    assert (record.action, record.object_id, record.via) == ("retry", str(run.pk), "admin")
    assert record.details == {"run": str(retried.pk)}
    assert record.text == f"Retried as run {retried.pk}"
    assert history_of(run) == [
        (CHANGE, "operator", f"Retried as run {retried.pk} (through the admin).")
    ]


def test_audit_run_now_through_the_api_names_its_run(operator: Any, schedule: Schedule) -> None:
    """*Run now* is recorded on the schedule, naming the run it started."""
    response = api_of(operator).post(f"/api/weft/schedules/{schedule.pk}/run-now/")
    assert response.status_code == 201, response.content
    record = the_record()
    assert (record.action, record.object_type, record.object_id, record.via) == (
        "run_now",
        "schedule",
        str(schedule.pk),
        "api",
    )
    assert record.details == {"run": response.json()["id"]}


def test_audit_schedule_create_through_the_admin_is_in_its_history_once(operator: Any) -> None:
    """The add form's save is recorded once: by the service layer, not again by Django."""
    form = {
        "name": "digest",
        "job": "tests.noop",
        "args": "{}",
        "enabled": "on",
        "cron": "0 7 * * *",
        "timezone": "UTC",
        "catch_up": "skip",
        "overlap": "skip",
        "on_gap": "shift",
        "on_fold": "first",
    }
    response = admin_of(operator).post(f"{SCHEDULES}add/", form)
    assert response.status_code == 302, response.content
    created = Schedule.objects.get(name="digest")
    record = the_record()
    assert (record.action, record.object_id, record.via) == (
        "schedule_create",
        str(created.pk),
        "admin",
    )
    assert history_of(created) == [(ADDITION, "operator", "Created (through the admin).")]


def test_audit_schedule_edit_through_the_api_names_what_changed(
    operator: Any, schedule: Schedule
) -> None:
    """An edit names the fields it changed (not their values); one that changes nothing
    is not recorded."""
    api = api_of(operator)
    url = f"/api/weft/schedules/{schedule.pk}/"
    assert api.patch(url, {"cron": "0 4 * * *"}, format="json").status_code == 200
    assert api.patch(url, {"cron": "0 4 * * *"}, format="json").status_code == 200
    record = the_record()
    assert (record.action, record.changed, record.via) == ("schedule_edit", ["cron"], "api")
    assert record.text == "Changed cron"
    assert history_of(schedule) == [(CHANGE, "operator", "Changed cron (through the REST API).")]


def test_audit_schedule_edit_of_what_runs_names_the_new_owner(schedule: Schedule) -> None:
    """Taking over another's schedule by changing its args is on record as an owner change."""
    editor = make_user("editor", "add_run", "change_schedule")
    operations.edit_schedule_for(editor, schedule, {"job": "tests.due"})
    assert the_record().changed == ["job", "owner"]


def test_audit_schedule_edit_keeps_private_args_off_the_record(operator: Any) -> None:
    """An args edit is on record by name: the values (private ones too) are not."""
    private = Schedule.objects.create(
        name="secretive",
        job="tests.private",
        args={"label": "a", "secret": "old"},
        every=timedelta(hours=1),
    )
    operations.edit_schedule_for(operator, private, {"args": {"label": "a", "secret": "hunter2"}})
    record = AuditRecord.objects.values().get()
    assert record["changed"] == ["args", "owner"]
    assert "hunter2" not in str(record)
    assert "hunter2" not in str(list(LogEntry.objects.values()))


def test_audit_enable_and_disable_record_each_schedule_switched(operator: Any) -> None:
    """The list's actions record each schedule they switch, not those already so."""
    on = Schedule.objects.create(name="on", job="tests.noop", every=timedelta(hours=1))
    off = Schedule.objects.create(
        name="off", job="tests.noop", every=timedelta(hours=1), enabled=False
    )
    admin = admin_of(operator)
    both = [str(on.pk), str(off.pk)]
    admin.post(SCHEDULES, {"action": "disable_action", "_selected_action": both})
    assert list(AuditRecord.objects.values_list("action", "object_id")) == [
        ("schedule_disable", str(on.pk))
    ]
    AuditRecord.objects.all().delete()
    admin.post(SCHEDULES, {"action": "enable_action", "_selected_action": both})
    assert sorted(AuditRecord.objects.values_list("action", "object_id")) == sorted(
        [("schedule_enable", str(off.pk)), ("schedule_enable", str(on.pk))]
    )
    assert set(AuditRecord.objects.values_list("via", flat=True)) == {"admin"}


def test_audit_schedule_delete_through_the_admin_keeps_its_id_and_name(
    operator: Any, schedule: Schedule
) -> None:
    """A delete is recorded before the row goes: its id and name stay on record."""
    pk = schedule.pk
    response = admin_of(operator).post(f"{SCHEDULES}{pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Schedule.objects.filter(pk=pk).exists()
    record = the_record()
    assert (record.action, record.object_id, record.object_repr) == (
        "schedule_delete",
        str(pk),
        "nightly",
    )
    entries = LogEntry.objects.values_list("action_flag", "object_id", "object_repr")
    assert list(entries) == [(DELETION, str(pk), "nightly")]


def test_audit_delete_selected_schedules_goes_through_the_service_layer(operator: Any) -> None:
    """Django's *delete selected* deletes each schedule through the service layer, each
    on record once."""
    rows = [
        Schedule.objects.create(name=name, job="tests.noop", every=timedelta(hours=1))
        for name in ("a", "b")
    ]
    selected = [str(row.pk) for row in rows]
    response = admin_of(operator).post(
        SCHEDULES, {"action": "delete_selected", "_selected_action": selected, "post": "yes"}
    )
    assert response.status_code == 302
    assert not Schedule.objects.exists()
    assert sorted(AuditRecord.objects.values_list("object_id", flat=True)) == sorted(selected)
    assert LogEntry.objects.count() == 2


def test_audit_queue_pause_and_resume_through_the_admin(operator: Any) -> None:
    """A pause and a resume are on record (a queue has no admin history); a pause of a
    paused queue is not."""
    admin = admin_of(operator)
    for _ in range(2):
        admin.post("/admin/django_weft/overview/queues/pause/", {"queue": "mail"})
    assert PausedQueue.objects.get(queue="mail").paused_by_id == operator.pk
    admin.post("/admin/django_weft/overview/queues/resume/", {"queue": "mail"})
    assert list(AuditRecord.objects.order_by("pk").values_list("action", "object_id")) == [
        ("queue_pause", "mail"),
        ("queue_resume", "mail"),
    ]
    assert set(AuditRecord.objects.values_list("object_type", "via")) == {("queue", "admin")}
    assert not LogEntry.objects.exists()


def test_audit_document_change_for_a_user_is_on_record(operator: Any) -> None:
    """A change made for a user is theirs on record; code's own bookkeeping is not."""
    document = operations.open_document("shell:entries", schema="shell.entries")
    operations.change_document(document, lambda data: data.update(n=1))
    assert not AuditRecord.objects.exists()
    changed = operations.change_document(document, lambda data: data.update(n=2), by=operator)
    record = the_record()
    assert (record.action, record.object_type, record.object_id) == (
        "document_change",
        "document",
        str(changed.pk),
    )
    assert record.details == {"revision": 2}
    assert history_of(changed) == [
        (CHANGE, "operator", "Changed to revision 2 (through Python code).")
    ]


# -- what leaves no record ---------------------------------------------------------------------


def test_audit_refused_actions_leave_no_record(viewer: Any, run: Run, schedule: Schedule) -> None:
    """A refusal (a missing permission, bad input) writes nothing, the record neither."""
    api = api_of(viewer)
    assert api.post(f"/api/weft/runs/{run.pk}/abort/").status_code == 403
    assert api.post(f"/api/weft/schedules/{schedule.pk}/run-now/").status_code == 403
    reply = async_to_sync(_socket_frame)(viewer, {"type": "abort", "run": str(run.pk)})
    assert reply["type"] == "error"
    admin_of(viewer).post("/admin/django_weft/overview/queues/pause/", {"queue": "mail"})
    with pytest.raises(Forbidden):
        operations.pause_queue_for(viewer, "mail")
    invalid = api_of(make_user("root", "change_schedule", "add_run")).patch(
        f"/api/weft/schedules/{schedule.pk}/", {"cron": "61 * * * *"}, format="json"
    )
    assert invalid.status_code == 400
    assert_nothing_on_record()
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED
    assert not PausedQueue.objects.exists()


def test_audit_record_is_rolled_back_with_its_action(operator: Any, run: Run) -> None:
    """The record is written in the action's transaction: rolled back, both are gone."""

    def abort_then_roll_back() -> None:
        with transaction.atomic():
            operations.abort_for(operator, run)
            raise RuntimeError("changed my mind")

    with pytest.raises(RuntimeError, match="changed my mind"):
        abort_then_roll_back()
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED
    assert_nothing_on_record()


def test_audit_record_outside_a_transaction_is_refused(operator: Any, run: Run) -> None:
    """``record()`` belongs to an action's transaction: alone, it refuses and writes nothing."""
    with pytest.raises(RuntimeError, match="inside the transaction"):
        operations.record(operator, "abort", run)
    assert_nothing_on_record()


def test_audit_record_refuses_an_unknown_action_or_entry_point(operator: Any, run: Run) -> None:
    """An action or an entry point that is not one of the known names is a ValueError."""
    with pytest.raises(ValueError, match="boom"), transaction.atomic():
        operations.record(operator, "boom", run)
    with pytest.raises(ValueError, match="telnet"), operations.entry_point("telnet"):
        pass
    assert_nothing_on_record()


def test_audit_record_keeps_who_acted_after_the_account_goes(operator: Any, run: Run) -> None:
    """The actor's name stays on record when the user is deleted."""
    operations.abort_for(operator, run)
    get_user_model().objects.filter(pk=operator.pk).delete()
    record = the_record()
    assert (record.actor_id, record.actor_name) == (None, "operator")


# -- pruning -----------------------------------------------------------------------------------


def aged_records(days: float) -> None:
    """Move every audit record and history entry ``days`` before now."""
    moment = clocks.now() - timedelta(days=days)
    AuditRecord.objects.update(at=moment)
    LogEntry.objects.update(action_time=moment)


def test_audit_prunejobs_prunes_the_trail_with_the_runs(operator: Any) -> None:
    """``prunejobs --older-than 30d`` deletes records (and weft's admin history) older
    than 30 days, and keeps the newer ones and the rest of the admin's history."""
    old = operations.start_for(operator, operations.parse_start(operator, {"job": "tests.noop"}))[0]
    LogEntry.objects.create(
        user=operator,
        content_type=ContentType.objects.get_for_model(get_user_model()),
        object_id=str(operator.pk),
        object_repr="operator",
        action_flag=CHANGE,
    )
    aged_records(40)
    recent = operations.start_for(
        operator, operations.parse_start(operator, {"job": "tests.noop"})
    )[0]
    AuditRecord.objects.filter(object_id=str(recent.pk)).update(at=clocks.now())
    LogEntry.objects.filter(object_id=str(recent.pk)).update(action_time=clocks.now())
    out = StringIO()
    call_command("prunejobs", "--older-than", "30d", "--batch-size", "1", stdout=out)
    assert "deleted 1 audit record(s) of actions taken before then" in out.getvalue()
    assert list(AuditRecord.objects.values_list("object_id", flat=True)) == [str(recent.pk)]
    assert not LogEntry.objects.filter(object_id=str(old.pk)).exists()
    assert LogEntry.objects.filter(object_id=str(recent.pk)).exists()
    assert LogEntry.objects.filter(object_repr="operator").exists(), "not weft's: kept"


def test_audit_prune_of_the_workers_prunes_the_trail_too(operator: Any, run: Run) -> None:
    """``prune()`` (``WEFT_PRUNE_AFTER``'s pruning) takes the old trail with the old runs."""
    operations.abort_for(operator, run)
    aged_records(40)
    prune(before=clocks.now() - timedelta(days=30), size=10)
    assert_nothing_on_record()


WAITING = "waiting for its owner's approval"


def test_audit_module_save_grant_and_approve_are_on_record() -> None:
    """A module's save, the host functions it is granted, and an approval of someone
    else's edit are each on record, on the module, with who did it."""
    owner = make_user("olga", "add_module", "grant_host_function")
    module = operations.save_module_for(
        owner, Module(name="m", source="def default():\n    return 1\n", grants=["tests.add"])
    )
    manager = make_user("mona", "manage_module")
    module.source = "def default():\n    return 2\n"
    operations.save_module_for(manager, module)
    assert operations.approve_module_for(owner, module, 2)
    on_record = [
        (entry.actor_name, entry.action, entry.object_id, entry.text)
        for entry in AuditRecord.objects.order_by("pk")
    ]
    assert on_record == [
        ("olga", "module_edit", str(module.pk), "Saved revision 1"),
        ("olga", "module_grant", str(module.pk), "Granted tests.add"),
        (
            "mona",
            "module_edit",
            str(module.pk),
            "Saved revision 2, waiting for its owner's approval",
        ),
        ("olga", "module_approve", str(module.pk), "Approved revision 2"),
    ]


def test_audit_module_delete_is_on_record_with_its_name_and_owner() -> None:
    """A module's delete is recorded before the row goes, under its id and name, with the
    revision that ran and whose it was: the name is free, and a module stored under it
    next is told apart from this one."""
    owner = make_user("olga", "add_module")
    module = operations.save_module_for(
        owner, Module(name="m", source="def default():\n    return 1\n", grants=[])
    )
    manager = make_user("mona", "manage_module", "add_module")
    pk = module.pk
    operations.delete_module_for(manager, module)
    assert not Module.objects.filter(pk=pk).exists()
    record = AuditRecord.objects.get(action="module_delete")
    assert (record.actor_name, record.object_id, record.object_repr, record.via) == (
        "mona",
        str(pk),
        "m",
        "python",
    )
    assert record.text == "Deleted at revision 1; its name is free"
    assert record.details == {"name": "m", "revision": 1, "approved": 1, "owner": "olga"}
    assert record.at == DRIVEN
    assert [(who, said) for _, who, said in history_of(module)] == [
        ("olga", "Saved revision 1 (through Python code)."),
        ("mona", "Deleted at revision 1; its name is free (through Python code)."),
    ]

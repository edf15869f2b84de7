"""The API's word on a parked schedule: why it fires nothing (``problem``), and whether its
owner's user was deleted (``owner_removed``), both read-only in the owner view; *run now*
of a schedule whose owner may not start runs is a 409 naming the reason. An edit sending
``enabled: true`` for a schedule whose owner was removed takes it over: the editor becomes
its owner, if they may start what it runs (a 403 naming what is missing otherwise)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from django_weft.models import AuditAction, AuditRecord, Module, Run, Schedule
from django_weft.sandbox.modules import save_module

pytestmark = pytest.mark.django_db

SCHEDULES = "/api/weft/schedules/"


def make_user(name: str, *codenames: str, **fields: Any) -> Any:
    user = get_user_model().objects.create_user(name, **fields)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return get_user_model().objects.get(pk=user.pk)


def client_of(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


@pytest.fixture
def operator() -> Any:
    """May see and change anyone's schedule, and start runs."""
    return make_user("operator", "view_schedule", "change_schedule", "add_run", "view_run")


def parked_schedule(owner: Any, problem: str) -> Schedule:
    schedule = Schedule.objects.create(
        name="nightly", job="tests.noop", cron="0 3 * * *", timezone="UTC", owner=owner
    )
    Schedule.objects.filter(pk=schedule.pk).update(problem=problem)
    return schedule


def test_owner_view_says_why_a_schedule_is_parked(operator: Any) -> None:
    alice = make_user("alice", "add_run")
    schedule = parked_schedule(alice, "owner alice is inactive")
    body = client_of(operator).get(f"{SCHEDULES}{schedule.pk}/").json()
    assert (body["problem"], body["owner_removed"], body["owner"]) == (
        "owner alice is inactive",
        False,
        "alice",
    )


def test_owner_view_says_the_owner_was_removed(operator: Any) -> None:
    alice = make_user("alice", "add_run")
    schedule = parked_schedule(alice, "")
    alice.delete()
    body = client_of(operator).get(f"{SCHEDULES}{schedule.pk}/").json()
    assert (body["owner"], body["owner_removed"]) == (None, True)


def test_guest_view_does_not_say_why(operator: Any) -> None:
    """The reason names the owner and what they lack: it is the owner view's."""
    schedule = parked_schedule(operator, "owner operator lacks django_weft.add_run")
    body = client_of(make_user("guest")).get(f"{SCHEDULES}{schedule.pk}/").json()
    assert "problem" not in body
    assert "owner_removed" not in body


def test_parked_reason_and_mark_are_read_only(operator: Any) -> None:
    """A PATCH naming them changes neither: only the scheduler and the owner's deletion
    write them."""
    alice = make_user("alice", "add_run")
    schedule = parked_schedule(alice, "owner alice is inactive")
    response = client_of(operator).patch(
        f"{SCHEDULES}{schedule.pk}/",
        {"problem": "", "owner_removed": True, "grace": "00:05:00"},
        format="json",
    )
    assert response.status_code == 200
    stored = Schedule.objects.get(pk=schedule.pk)
    assert (stored.problem, stored.owner_removed) == ("owner alice is inactive", False)
    assert response.json()["problem"] == "owner alice is inactive"


def test_run_now_of_a_schedule_whose_owner_may_not_start_is_409(operator: Any) -> None:
    alice = make_user("alice", "add_run", is_active=False)
    schedule = parked_schedule(alice, "")
    response = client_of(operator).post(f"{SCHEDULES}{schedule.pk}/run-now/")
    assert response.status_code == 409
    assert response.json() == {
        "code": "refused",
        "detail": "schedule nightly does not start runs: owner alice is inactive",
    }
    assert not Run.objects.exists()


def orphaned(job: str = "tests.noop", args: dict[str, Any] | None = None) -> Schedule:
    """A schedule whose owner's user was deleted: parked, ``owner_removed``."""
    bob = make_user("bob", "add_run")
    schedule = Schedule.objects.create(
        name="nightly", job=job, args=args or {}, cron="0 3 * * *", timezone="UTC", owner=bob
    )
    bob.delete()
    return Schedule.objects.get(pk=schedule.pk)


def test_enabling_a_schedule_whose_owner_was_removed_makes_the_editor_its_owner(
    operator: Any,
) -> None:
    """``enabled: true`` takes it over: the editor owns it (never the deployment, with no
    owner), it fires from now as them, and the take-over is on record."""
    schedule = orphaned()
    response = client_of(operator).patch(
        f"{SCHEDULES}{schedule.pk}/", {"enabled": True}, format="json"
    )
    assert response.status_code == 200, response.data
    assert (response.json()["owner"], response.json()["owner_removed"]) == ("operator", False)
    taken = Schedule.objects.get(pk=schedule.pk)
    assert (taken.owner_id, taken.owner_removed, taken.enabled) == (operator.pk, False, True)
    record = AuditRecord.objects.get(action=AuditAction.SCHEDULE_TAKE_OVER)
    assert (record.actor_name, record.via, record.details) == (
        "operator",
        "api",
        {"owner": "operator"},
    )
    assert record.text == "Took over (its owner was removed): its runs start as operator"


def test_enabling_a_schedule_whose_owner_was_removed_needs_add_run() -> None:
    """An editor who may not start runs may not take it over: 403 naming add_run, and
    the row stays parked, with nothing on record."""
    schedule = orphaned()
    changer = make_user("changer", "view_schedule", "change_schedule")
    response = client_of(changer).patch(
        f"{SCHEDULES}{schedule.pk}/", {"enabled": True}, format="json"
    )
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "you may not take over schedule nightly, whose owner was removed: whoever enables "
        "it becomes its owner (needs django_weft.add_run)"
    )
    kept = Schedule.objects.get(pk=schedule.pk)
    assert (kept.owner_id, kept.owner_removed) == (None, True)
    assert not AuditRecord.objects.exists()


def test_enabling_a_module_schedule_whose_owner_was_removed_needs_the_module(
    operator: Any,
) -> None:
    """Its runs would call a stored module as the editor: without owning it or
    use_module, 403 naming the module and use_module; with use_module, taken over."""
    save_module(Module(name="m", source="def default():\n    return 1\n", grants=[]))
    schedule = orphaned("weft.module", {"module": "m"})
    url = f"{SCHEDULES}{schedule.pk}/"
    response = client_of(operator).patch(url, {"enabled": True}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == (
        "you may not take over schedule nightly, whose owner was removed: whoever enables "
        "it becomes its owner, and its args are refused for you (module: Only its owner "
        'and users with django_weft.use_module may call the stored module "m")'
    )
    assert Schedule.objects.get(pk=schedule.pk).owner_removed is True
    operator.user_permissions.add(Permission.objects.get(codename="use_module"))
    user = get_user_model().objects.get(pk=operator.pk)
    assert client_of(user).patch(url, {"enabled": True}, format="json").status_code == 200
    assert Schedule.objects.get(pk=schedule.pk).owner_id == operator.pk


def test_an_edit_that_leaves_enabled_alone_does_not_take_over(operator: Any) -> None:
    """Only ``enabled: true`` (or a change of what it runs) takes it over: a plan edit
    leaves it parked, without owner."""
    schedule = orphaned()
    response = client_of(operator).patch(
        f"{SCHEDULES}{schedule.pk}/", {"cron": "0 4 * * *"}, format="json"
    )
    assert response.status_code == 200
    kept = Schedule.objects.get(pk=schedule.pk)
    assert (kept.owner_id, kept.owner_removed, kept.cron) == (None, True, "0 4 * * *")

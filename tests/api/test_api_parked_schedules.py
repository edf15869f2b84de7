"""The API's word on a parked schedule: why it fires nothing (``problem``), and whether its
owner's user was deleted (``owner_removed``), both read-only in the owner view; *run now*
of a schedule whose owner may not start runs is a 409 naming the reason."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from django_weft.models import Run, Schedule

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

"""Groups through the REST API: a start (with an Idempotency-Key) checked field by
field, the two views, adding, sealing and aborting, each refused to whom it must be."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from django_weft.models import AuditAction, AuditRecord, Group, Run, RunStatus
from django_weft.testing import Rehearsal

pytestmark = pytest.mark.django_db(transaction=True)

GROUPS = "/api/weft/groups/"
NOW = timedelta(0)


def make_user(name: str, *codenames: str) -> Any:
    user = get_user_model().objects.create_user(name)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture
def owner() -> Any:
    return make_user("owner", "add_run")


@pytest.fixture
def guest() -> Any:
    return make_user("guest")


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def member(number: int) -> dict[str, Any]:
    return {"job": "tests.flows.member", "args": {"number": number}}


BODY = {
    "name": "squares",
    "members": [member(1), member(2)],
    "callback": {"job": "tests.flows.gather", "args": {"label": "api"}},
}


def test_api_group_start_is_idempotent_and_calls_back(
    owner: Any, guest: Any, rehearsal: Rehearsal
) -> None:
    first = api(owner).post(GROUPS, BODY, format="json", HTTP_IDEMPOTENCY_KEY="g-1")
    assert first.status_code == 201, first.content
    again = api(owner).post(GROUPS, BODY, format="json", HTTP_IDEMPOTENCY_KEY="g-1")
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])
    assert first.json()["callback"] == {"job": "tests.flows.gather", "args": {"label": "api"}}
    assert (first.json()["total"], first.json()["sealed"]) == (2, True)
    assert AuditRecord.objects.filter(action=AuditAction.GROUP_START).count() == 1

    rehearsal.advance(NOW)
    rehearsal.advance(NOW)
    seen = api(guest).get(f"{GROUPS}{first.json()['id']}/").json()
    assert (seen["done"], seen["ended"], seen["owner"]) == (2, True, "owner")
    assert "callback" not in seen, "a guest does not see the callbacks' args"
    callback = Run.objects.get(pk=seen["callback_run"])
    assert callback.status == RunStatus.DONE
    listed = api(guest).get(GROUPS).json()
    assert [group["id"] for group in listed["results"]] == [seen["id"]]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"members": []}, "members", "A list of 1 to 1000"),
        ({"members": [member(1)], "conditon": "all_done"}, "conditon", "a group accepts"),
        (
            {"members": [member(1), {"job": "tests.flows.member", "args": {"numbr": 1}}]},
            "members.1.args.numbr",
            "Unknown arg",
        ),
        ({"members": [{"job": "no.such.job"}]}, "members.0.job", "no job named"),
        ({"members": [member(1)], "condition": "most"}, "condition", "all_ended"),
        (
            {"members": [member(1)], "callback": {"job": "tests.flows.gather", "x": 1}},
            "callback",
            "A callback accepts",
        ),
    ],
)
def test_api_group_start_with_bad_input_is_400_naming_the_field(
    owner: Any, body: dict[str, Any], field: str, words: str
) -> None:
    reply = api(owner).post(GROUPS, body, format="json")
    assert reply.status_code == 400, reply.content
    assert words in " ".join(reply.json()[field]), reply.json()
    assert not Group.objects.exists()
    assert not Run.objects.exists()


def test_api_group_needs_add_run_and_its_owner_to_change_it(
    owner: Any, guest: Any, rehearsal: Rehearsal
) -> None:
    refused = api(guest).post(GROUPS, BODY, format="json")
    assert refused.status_code == 403
    open_group = api(owner).post(GROUPS, {**BODY, "sealed": False}, format="json").json()
    url = f"{GROUPS}{open_group['id']}/"
    assert (
        api(guest).post(f"{url}members/", {"members": [member(3)]}, format="json").status_code
        == 403
    )
    assert api(guest).post(f"{url}seal/").status_code == 403
    assert api(guest).post(f"{url}abort/").status_code == 403

    added = api(owner).post(f"{url}members/", {"members": [member(3)]}, format="json")
    assert (added.status_code, added.json()["total"]) == (201, 3)
    sealed = api(owner).post(f"{url}seal/")
    assert (sealed.status_code, sealed.json()["sealed"]) == (200, True)
    closed = api(owner).post(f"{url}members/", {"members": [member(4)]}, format="json")
    assert (closed.status_code, closed.json()["code"]) == (409, "group_closed")
    aborted = api(owner).post(f"{url}abort/")
    assert (aborted.status_code, aborted.json()["aborted"]) == (202, 3)
    actions = set(AuditRecord.objects.values_list("action", flat=True))
    assert {"group_start", "group_add", "group_seal", "group_abort"} <= actions

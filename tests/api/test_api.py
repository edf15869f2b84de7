"""The REST API (DESIGN §5): runs and schedules, owner and guest views, permissions, errors.

Principals: ``owner`` may start runs and create schedules (add_run, add_schedule) and
owns what it makes; ``guest`` is signed in with no permission; ``operator`` has the
view/change/delete permissions that reach other people's rows. Every refusal is checked
to have written nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.urls import reverse
from rest_framework.response import Response
from rest_framework.test import APIClient

from django_weft.jobs.registry import registry
from django_weft.models import Run, RunStatus, Schedule
from django_weft.operations import start

pytestmark = pytest.mark.django_db

RUNS = "/api/weft/runs/"
SCHEDULES = "/api/weft/schedules/"
TORONTO = "America/Toronto"
#: The id of no run: a fixed one, so that every test process collects the same test ids.
NO_RUN = uuid.UUID("00000000-0000-4000-8000-000000000000")

#: Fields only the owner view of a run has.
RUN_OWNER_ONLY = {"result", "error_type", "error_message", "state", "state_revision"}
#: Fields only the owner view of a schedule has.
SCHEDULE_OWNER_ONLY = {"args", "last_error_type", "last_error_message", "owner", "problem"}


def make_user(name: str, *codenames: str) -> Any:
    user = get_user_model().objects.create_user(name)  # no password: hashing is slow
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    # Fetched again: has_perm caches what it read on the instance.
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture
def owner() -> Any:
    return make_user("owner", "add_run", "add_schedule")


@pytest.fixture
def guest() -> Any:
    return make_user("guest")


@pytest.fixture
def operator() -> Any:
    return make_user(
        "operator",
        "view_run",
        "change_run",
        "view_schedule",
        "change_schedule",
        "delete_schedule",
    )


@pytest.fixture
def as_user() -> Callable[[Any], APIClient]:
    def client(user: Any) -> APIClient:
        api = APIClient()
        api.force_authenticate(user)
        return api

    return client


def post(client: APIClient, url: str, data: Any = None, **extra: Any) -> Response:
    response: Response = client.post(url, data, format="json", **extra)
    return response


def private_run(user: Any, label: str = "mine", secret: str = "hunter2") -> Run:
    return start(registry.get("tests.private"), {"label": label, "secret": secret}, owner=user)


def schedule_for(user: Any, **fields: Any) -> Schedule:
    values: dict[str, Any] = {
        "name": "nightly",
        "job": "tests.private",
        "args": {"label": "nightly", "secret": "s3cret"},
        "cron": "0 3 * * *",
        "timezone": TORONTO,
        "owner": user,
        **fields,
    }
    return Schedule.objects.create(**values)


# -- anonymous --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", RUNS),
        ("post", RUNS),
        ("get", f"{RUNS}{NO_RUN}/"),
        ("post", f"{RUNS}{NO_RUN}/abort/"),
        ("get", SCHEDULES),
        ("post", SCHEDULES),
        ("get", f"{SCHEDULES}1/"),
        ("put", f"{SCHEDULES}1/"),
        ("patch", f"{SCHEDULES}1/"),
        ("delete", f"{SCHEDULES}1/"),
        ("post", f"{SCHEDULES}1/run-now/"),
    ],
)
def test_anonymous_requests_are_refused_everywhere(method: str, url: str) -> None:
    response = getattr(APIClient(), method)(url, {"job": "tests.noop", "name": "x"}, format="json")
    assert response.status_code in (401, 403)
    assert "credentials were not provided" in response.json()["detail"]
    assert not Run.objects.exists()
    assert not Schedule.objects.exists()


# -- start --------------------------------------------------------------------------------


def test_start_returns_the_owner_view_with_201(owner: Any, as_user: Callable[..., Any]) -> None:
    response = post(
        as_user(owner), RUNS, {"job": "tests.private", "args": {"label": "a", "secret": "s"}}
    )
    assert response.status_code == 201
    body = response.json()
    run = Run.objects.get()
    assert body["id"] == str(run.id)
    assert run.owner == owner
    assert run.idempotency_key is None
    assert body["owner"] == "owner"
    assert body["phase"] == "queued"
    assert body["args"] == {"label": "a", "secret": "s"}
    assert body["state"] == {"note": "for the owner"}
    assert set(body) >= RUN_OWNER_ONLY


def test_start_without_add_run_is_403_naming_the_permission(
    guest: Any, as_user: Callable[..., Any]
) -> None:
    response = post(as_user(guest), RUNS, {"job": "tests.noop"})
    assert response.status_code == 403
    assert response.json() == {"detail": "you may not start runs (needs django_weft.add_run)"}
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        pytest.param(
            {"job": "tests.nope"},
            {"job": ['no job named "tests.nope" is registered']},
            id="unknown-job",
        ),
        pytest.param({"args": {}}, {"job": ["This field is required."]}, id="no-job"),
        pytest.param({"job": "tests.noop", "args": [1]}, {"args": None}, id="args-not-an-object"),
    ],
)
def test_start_with_a_bad_body_is_400_naming_the_field(
    owner: Any, as_user: Callable[..., Any], body: dict[str, Any], errors: dict[str, Any]
) -> None:
    response = post(as_user(owner), RUNS, body)
    assert response.status_code == 400
    got = response.json()
    assert set(got) == set(errors)
    for field, messages in errors.items():
        if messages is not None:
            assert got[field] == messages
    assert not Run.objects.exists()


def test_start_with_invalid_args_is_400_naming_each_arg(
    owner: Any, as_user: Callable[..., Any]
) -> None:
    response = post(
        as_user(owner), RUNS, {"job": "shell.run", "args": {"command": "", "lines": -1, "extra": 1}}
    )
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"args"}
    assert set(errors["args"]) == {"command", "lines", "extra"}
    assert all(isinstance(m, str) for messages in errors["args"].values() for m in messages)
    assert "Unknown arg" in errors["args"]["extra"][0]
    assert not Run.objects.exists()


def test_concurrency_limit_is_409_and_writes_nothing(
    owner: Any, as_user: Callable[..., Any]
) -> None:
    client = as_user(owner)
    body = {"job": "shell.run", "args": {"command": "ls", "lines": 3}}
    assert post(client, RUNS, body).status_code == 201
    response = post(client, RUNS, body)
    assert response.status_code == 409
    refusal = response.json()
    assert refusal["code"] == "concurrency_limit"
    assert 'job "shell.run" allows 1 unfinished run at once' in refusal["detail"]
    assert Run.objects.count() == 1


def test_idempotency_key_replay_returns_200_and_the_same_run(
    owner: Any, as_user: Callable[..., Any]
) -> None:
    client = as_user(owner)
    body = {"job": "tests.private", "args": {"label": "a", "secret": "s"}}
    first = post(client, RUNS, body, HTTP_IDEMPOTENCY_KEY="key-1")
    again = post(client, RUNS, body, HTTP_IDEMPOTENCY_KEY="key-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert again.json()["args"] == body["args"]
    run = Run.objects.get()
    assert run.idempotency_key == f"{owner.pk}:key-1"


def test_idempotency_key_with_other_args_is_409_and_writes_nothing(
    owner: Any, as_user: Callable[..., Any]
) -> None:
    client = as_user(owner)
    post(client, RUNS, {"job": "tests.sleep", "args": {"seconds": 1}}, HTTP_IDEMPOTENCY_KEY="k")
    response = post(
        client, RUNS, {"job": "tests.sleep", "args": {"seconds": 2}}, HTTP_IDEMPOTENCY_KEY="k"
    )
    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_key_reused"
    assert "use a new key" in response.json()["detail"]
    assert Run.objects.count() == 1


def test_idempotency_keys_are_scoped_per_user(owner: Any, as_user: Callable[..., Any]) -> None:
    other = make_user("other", "add_run")
    body = {"job": "tests.sleep", "args": {"seconds": 1}}
    mine = post(as_user(owner), RUNS, body, HTTP_IDEMPOTENCY_KEY="same")
    theirs = post(as_user(other), RUNS, body, HTTP_IDEMPOTENCY_KEY="same")
    assert (mine.status_code, theirs.status_code) == (201, 201)
    assert mine.json()["id"] != theirs.json()["id"]
    assert theirs.json()["owner"] == "other"
    assert sorted(Run.objects.values_list("idempotency_key", flat=True)) == sorted(
        [f"{owner.pk}:same", f"{other.pk}:same"]
    )


@pytest.mark.parametrize("key", ["", "   ", "k" * 250], ids=["empty", "blank", "too-long"])
def test_unusable_idempotency_key_is_400_naming_the_header(
    owner: Any, as_user: Callable[..., Any], key: str
) -> None:
    response = post(as_user(owner), RUNS, {"job": "tests.noop"}, HTTP_IDEMPOTENCY_KEY=key)
    assert response.status_code == 400
    assert set(response.json()) == {"Idempotency-Key"}
    assert not Run.objects.exists()


# -- list and read ------------------------------------------------------------------------


def test_list_shows_own_runs_in_full_and_others_as_a_guest(
    owner: Any, guest: Any, as_user: Callable[..., Any]
) -> None:
    theirs = private_run(owner, "theirs")
    mine = private_run(guest, "mine")
    # A guest may own runs too (started elsewhere); its own are shown in full.
    response = as_user(guest).get(RUNS)
    assert response.status_code == 200
    page = response.json()
    assert page["count"] == 2
    by_id = {row["id"]: row for row in page["results"]}
    own, other = by_id[str(mine.id)], by_id[str(theirs.id)]
    assert set(own) >= RUN_OWNER_ONLY
    assert own["args"] == {"label": "mine", "secret": "hunter2"}
    assert not RUN_OWNER_ONLY & set(other)
    assert other["args"] == {"label": "theirs"}
    assert other["phase"] == "queued"
    assert other["owner"] == "owner"


def test_view_run_sees_every_run_in_full(
    owner: Any, operator: Any, as_user: Callable[..., Any]
) -> None:
    private_run(owner)
    rows = as_user(operator).get(RUNS).json()["results"]
    assert len(rows) == 1
    assert rows[0]["args"]["secret"] == "hunter2"
    assert rows[0]["state"] == {"note": "for the owner"}


def test_list_is_newest_first_filtered_and_paginated(
    owner: Any, guest: Any, as_user: Callable[..., Any]
) -> None:
    first = private_run(owner, "first")
    second = private_run(guest, "second")
    third = start(registry.get("tests.noop"), owner=owner)
    Run.objects.filter(pk=third.pk).update(status=RunStatus.DONE)
    client = as_user(guest)

    def ids(query: str) -> list[str]:
        response = client.get(RUNS + query)
        assert response.status_code == 200
        return [row["id"] for row in response.json()["results"]]

    assert ids("") == [str(third.id), str(second.id), str(first.id)]
    assert ids("?job=tests.private") == [str(second.id), str(first.id)]
    assert ids("?status=done") == [str(third.id)]
    assert ids("?owner=owner") == [str(third.id), str(first.id)]
    assert ids("?owner=owner&job=tests.private") == [str(first.id)]
    assert ids("?owner=nobody") == []
    page = client.get(RUNS + "?limit=1&offset=1").json()
    assert page["count"] == 3
    assert [row["id"] for row in page["results"]] == [str(second.id)]
    assert "offset=2" in page["next"]


def test_list_with_an_unknown_status_is_400(guest: Any, as_user: Callable[..., Any]) -> None:
    response = as_user(guest).get(RUNS + "?status=sleeping")
    assert response.status_code == 400
    assert set(response.json()) == {"status"}


def test_retrieve_owner_and_guest_views(
    owner: Any, guest: Any, as_user: Callable[..., Any]
) -> None:
    run = private_run(owner)
    url = f"{RUNS}{run.id}/"
    full = as_user(owner).get(url)
    seen = as_user(guest).get(url)
    assert (full.status_code, seen.status_code) == (200, 200)
    assert full.json()["args"]["secret"] == "hunter2"
    assert full.json()["state"] == {"note": "for the owner"}
    assert seen.json()["args"] == {"label": "mine"}
    assert not RUN_OWNER_ONLY & set(seen.json())
    assert "hunter2" not in seen.content.decode()


@pytest.mark.parametrize("run_id", [str(NO_RUN), "not-a-uuid", "123"])
def test_unknown_or_malformed_run_id_is_404(
    owner: Any, as_user: Callable[..., Any], run_id: str
) -> None:
    client = as_user(owner)
    assert client.get(f"{RUNS}{run_id}/").status_code == 404
    assert post(client, f"{RUNS}{run_id}/abort/").status_code == 404


# -- abort --------------------------------------------------------------------------------


def test_owner_aborts_a_queued_run_at_once(owner: Any, as_user: Callable[..., Any]) -> None:
    run = private_run(owner)
    response = post(as_user(owner), f"{RUNS}{run.id}/abort/")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "aborted"
    assert body["abort_requested"] is True
    assert body["state"] == {"note": "for the owner"}
    run.refresh_from_db()
    assert run.status == RunStatus.ABORTED
    assert run.abort_requested_at is not None


def test_abort_of_a_running_run_is_a_request_and_can_be_repeated(
    owner: Any, as_user: Callable[..., Any]
) -> None:
    run = private_run(owner)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    client = as_user(owner)
    for _ in range(2):
        response = post(client, f"{RUNS}{run.id}/abort/")
        assert response.status_code == 202
        assert response.json()["status"] == "running"
        assert response.json()["abort_requested"] is True
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    assert run.abort_requested_at is not None


def test_guest_may_not_abort_someone_elses_run(
    owner: Any, guest: Any, as_user: Callable[..., Any]
) -> None:
    run = private_run(owner)
    response = post(as_user(guest), f"{RUNS}{run.id}/abort/")
    assert response.status_code == 403
    assert response.json() == {
        "detail": f"you may not abort run {run.id} "
        "(needs django_weft.change_run, or to be its owner)"
    }
    run.refresh_from_db()
    assert (run.status, run.abort_requested_at) == (RunStatus.QUEUED, None)


def test_change_run_aborts_anyones_run(
    owner: Any, operator: Any, as_user: Callable[..., Any]
) -> None:
    run = private_run(owner)
    response = post(as_user(operator), f"{RUNS}{run.id}/abort/")
    assert response.status_code == 202
    assert response.json()["status"] == "aborted"


def test_change_run_without_view_run_gets_the_guest_view(
    owner: Any, as_user: Callable[..., Any]
) -> None:
    aborter = make_user("aborter", "change_run")
    run = private_run(owner)
    response = post(as_user(aborter), f"{RUNS}{run.id}/abort/")
    assert response.status_code == 202
    assert response.json()["status"] == "aborted"
    assert not RUN_OWNER_ONLY & set(response.json())
    assert "secret" not in response.json()["args"]


def test_aborting_a_finished_run_is_409(owner: Any, as_user: Callable[..., Any]) -> None:
    run = private_run(owner)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.DONE)
    response = post(as_user(owner), f"{RUNS}{run.id}/abort/")
    assert response.status_code == 409
    assert response.json()["code"] == "finished"
    assert "already finished (done)" in response.json()["detail"]
    run.refresh_from_db()
    assert (run.status, run.abort_requested_at) == (RunStatus.DONE, None)


# -- schedules ----------------------------------------------------------------------------

NEW_SCHEDULE: dict[str, Any] = {
    "name": "morning",
    "job": "tests.private",
    "args": {"label": "morning", "secret": "s3cret"},
    "cron": "0 7 * * *",
    "timezone": TORONTO,
}


def test_create_schedule_returns_the_owner_view(owner: Any, as_user: Callable[..., Any]) -> None:
    response = post(as_user(owner), SCHEDULES, NEW_SCHEDULE)
    assert response.status_code == 201, response.json()
    body = response.json()
    schedule = Schedule.objects.get()
    assert schedule.owner == owner
    assert body["id"] == schedule.pk
    assert body["owner"] == "owner"
    assert body["args"] == NEW_SCHEDULE["args"]
    assert body["cron"] == "0 7 * * *"
    assert body["enabled"] is True
    assert set(body) >= SCHEDULE_OWNER_ONLY


def test_create_schedule_ignores_an_owner_in_the_body(
    owner: Any, guest: Any, as_user: Callable[..., Any]
) -> None:
    response = post(as_user(owner), SCHEDULES, {**NEW_SCHEDULE, "owner": guest.pk})
    assert response.status_code == 201
    assert Schedule.objects.get().owner == owner


def test_create_schedule_without_add_schedule_is_403(
    guest: Any, as_user: Callable[..., Any]
) -> None:
    response = post(as_user(guest), SCHEDULES, NEW_SCHEDULE)
    assert response.status_code == 403
    assert response.json() == {
        "detail": "you may not create schedules (needs django_weft.add_schedule)"
    }
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        pytest.param({"cron": "61 7 * * *"}, {"cron"}, id="bad-cron"),
        pytest.param({"timezone": "Mars/Olympus"}, {"timezone"}, id="unknown-zone"),
        pytest.param({"timezone": ""}, {"timezone"}, id="cron-without-zone"),
        pytest.param({"every": "01:00:00"}, {"cron", "every"}, id="two-plans"),
        pytest.param({"cron": "", "every": "-00:00:05"}, {"every"}, id="negative-interval"),
        pytest.param({"job": "tests.nope"}, {"job"}, id="unknown-job"),
        pytest.param({"args": {"label": "x"}}, {"args"}, id="missing-arg"),
        pytest.param({"name": ""}, {"name"}, id="no-name"),
        pytest.param({"overlap": "sometimes"}, {"overlap"}, id="bad-policy"),
    ],
)
def test_create_invalid_schedule_is_400_naming_the_fields(
    owner: Any, as_user: Callable[..., Any], change: dict[str, Any], fields: set[str]
) -> None:
    response = post(as_user(owner), SCHEDULES, {**NEW_SCHEDULE, **change})
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == fields
    assert all(isinstance(messages, list) and messages for messages in errors.values())
    assert not Schedule.objects.exists()


def test_create_schedule_with_a_taken_name_is_400(owner: Any, as_user: Callable[..., Any]) -> None:
    schedule_for(owner, name="morning")
    response = post(as_user(owner), SCHEDULES, NEW_SCHEDULE)
    assert response.status_code == 400
    assert set(response.json()) == {"name"}
    assert Schedule.objects.count() == 1


def test_schedules_are_listed_in_full_to_their_owner_and_as_a_guest_to_others(
    owner: Any, guest: Any, operator: Any, as_user: Callable[..., Any]
) -> None:
    schedule = schedule_for(owner)
    Schedule.objects.filter(pk=schedule.pk).update(
        last_status="failed", last_error_type="Boom", last_error_message="it broke"
    )
    for user, full in [(owner, True), (guest, False), (operator, True)]:
        listed = as_user(user).get(SCHEDULES)
        read = as_user(user).get(f"{SCHEDULES}{schedule.pk}/")
        assert (listed.status_code, read.status_code) == (200, 200)
        assert listed.json()["count"] == 1
        for row in (listed.json()["results"][0], read.json()):
            assert row["name"] == "nightly"
            assert row["cron"] == "0 3 * * *"
            assert row["last_status"] == "failed"
            assert (set(row) >= SCHEDULE_OWNER_ONLY) is full
            if not full:
                assert not SCHEDULE_OWNER_ONLY & set(row)
                assert set(row) == {
                    "id",
                    "name",
                    "job",
                    "cron",
                    "timezone",
                    "every",
                    "at",
                    "on_gap",
                    "on_fold",
                    "enabled",
                    "next_due",
                    "last_status",
                    "last_started",
                    "last_ended",
                }


@pytest.mark.parametrize("schedule_id", ["999999", "abc"])
def test_unknown_schedule_is_404(owner: Any, as_user: Callable[..., Any], schedule_id: str) -> None:
    client = as_user(owner)
    url = f"{SCHEDULES}{schedule_id}/"
    assert client.get(url).status_code == 404
    assert client.patch(url, {"enabled": False}, format="json").status_code == 404
    assert client.delete(url).status_code == 404
    assert post(client, f"{url}run-now/").status_code == 404


def test_owner_patches_and_puts_a_schedule(owner: Any, as_user: Callable[..., Any]) -> None:
    schedule = schedule_for(owner)
    client = as_user(owner)
    url = f"{SCHEDULES}{schedule.pk}/"
    patched = client.patch(url, {"cron": "30 4 * * *", "enabled": False}, format="json")
    assert patched.status_code == 200
    assert patched.json()["cron"] == "30 4 * * *"
    assert patched.json()["enabled"] is False
    assert patched.json()["args"] == {"label": "nightly", "secret": "s3cret"}
    put = client.put(url, {**NEW_SCHEDULE, "name": "renamed"}, format="json")
    assert put.status_code == 200, put.json()
    schedule.refresh_from_db()
    assert (schedule.name, schedule.cron, schedule.owner) == ("renamed", "0 7 * * *", owner)


@pytest.mark.parametrize(
    ("change", "field"),
    [({"cron": "0 7 * *"}, "cron"), ({"timezone": "Nowhere/Else"}, "timezone")],
)
def test_invalid_edit_is_400_and_changes_nothing(
    owner: Any, as_user: Callable[..., Any], change: dict[str, Any], field: str
) -> None:
    schedule = schedule_for(owner)
    response = as_user(owner).patch(f"{SCHEDULES}{schedule.pk}/", change, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {field}
    stored = Schedule.objects.get()
    assert (stored.cron, stored.timezone) == ("0 3 * * *", TORONTO)


def test_guest_may_not_change_delete_or_run_someone_elses_schedule(
    owner: Any, guest: Any, as_user: Callable[..., Any]
) -> None:
    schedule = schedule_for(owner)
    client = as_user(guest)
    url = f"{SCHEDULES}{schedule.pk}/"
    needs_change = (
        "you may not change schedule nightly "
        "(needs django_weft.change_schedule, or to be its owner)"
    )
    for response in (
        client.patch(url, {"enabled": False}, format="json"),
        client.put(url, NEW_SCHEDULE, format="json"),
    ):
        assert response.status_code == 403
        assert response.json() == {"detail": needs_change}
    deleted = client.delete(url)
    assert deleted.status_code == 403
    assert "django_weft.delete_schedule" in deleted.json()["detail"]
    ran = post(client, f"{url}run-now/")
    assert ran.status_code == 403
    assert ran.json() == {
        "detail": "you may not run now schedule nightly "
        "(needs django_weft.change_schedule, or to be its owner)"
    }
    stored = Schedule.objects.get()
    assert (stored.name, stored.enabled) == ("nightly", True)
    assert not Run.objects.exists()


def test_change_schedule_without_view_schedule_edits_but_sees_a_guest_view(
    owner: Any, as_user: Callable[..., Any]
) -> None:
    editor = make_user("editor", "change_schedule")
    schedule = schedule_for(owner)
    response = as_user(editor).patch(
        f"{SCHEDULES}{schedule.pk}/", {"enabled": False}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["enabled"] is False
    assert "args" not in response.json()
    assert Schedule.objects.get().enabled is False


def test_delete_schedule(owner: Any, operator: Any, as_user: Callable[..., Any]) -> None:
    mine = schedule_for(owner)
    other = schedule_for(make_user("someone"), name="other")
    assert as_user(owner).delete(f"{SCHEDULES}{mine.pk}/").status_code == 204
    assert as_user(operator).delete(f"{SCHEDULES}{other.pk}/").status_code == 204
    assert not Schedule.objects.exists()


def test_run_now_starts_a_run_of_the_schedule(owner: Any, as_user: Callable[..., Any]) -> None:
    schedule = schedule_for(owner)
    response = post(as_user(owner), f"{SCHEDULES}{schedule.pk}/run-now/")
    assert response.status_code == 201
    body = response.json()
    run = Run.objects.get()
    assert body["id"] == str(run.id)
    assert body["schedule"] == "nightly"
    assert body["owner"] == "owner"
    assert body["args"] == {"label": "nightly", "secret": "s3cret"}
    assert body["state"] == {"note": "for the owner"}
    assert (run.schedule, run.owner) == (schedule, owner)
    schedule.refresh_from_db()
    assert (schedule.last_run, schedule.last_status) == (run, "running")


def test_run_now_by_change_schedule_on_someone_elses_schedule(
    owner: Any, operator: Any, as_user: Callable[..., Any]
) -> None:
    """An operator may run another user's schedule now, if they may start runs."""
    schedule = schedule_for(owner)
    refused = post(as_user(operator), f"{SCHEDULES}{schedule.pk}/run-now/")
    assert refused.status_code == 403
    assert refused.json() == {"detail": "you may not start runs (needs django_weft.add_run)"}
    assert not Run.objects.exists()
    operator.user_permissions.add(Permission.objects.get(codename="add_run"))
    operator = get_user_model().objects.get(pk=operator.pk)  # without its permission cache
    response = post(as_user(operator), f"{SCHEDULES}{schedule.pk}/run-now/")
    assert response.status_code == 201
    # The run belongs to the schedule's owner, whoever pressed the button.
    assert Run.objects.get().owner == owner
    assert response.json()["args"]["secret"] == "s3cret"  # operator has view_run


def test_run_now_past_the_concurrency_limit_is_409(owner: Any, as_user: Callable[..., Any]) -> None:
    schedule = schedule_for(
        owner, job="shell.run", args={"command": "ls", "lines": 1}, name="shell"
    )
    client = as_user(owner)
    url = f"{SCHEDULES}{schedule.pk}/run-now/"
    assert post(client, url).status_code == 201
    response = post(client, url)
    assert response.status_code == 409
    assert response.json()["code"] == "concurrency_limit"
    assert Run.objects.count() == 1


def test_run_now_of_a_job_no_longer_deployed_is_400(
    owner: Any, as_user: Callable[..., Any]
) -> None:
    schedule = schedule_for(owner)
    Schedule.objects.filter(pk=schedule.pk).update(job="tests.gone")
    response = post(as_user(owner), f"{SCHEDULES}{schedule.pk}/run-now/")
    assert response.status_code == 400
    assert set(response.json()) == {"job"}
    assert not Run.objects.exists()


# -- schema -------------------------------------------------------------------------------


def test_openapi_schema_describes_runs_and_schedules(
    guest: Any, as_user: Callable[..., Any]
) -> None:
    response = as_user(guest).get(
        "/api/weft/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    )
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in (
        "/api/weft/runs/",
        "/api/weft/runs/{id}/",
        "/api/weft/runs/{id}/abort/",
        "/api/weft/schedules/",
        "/api/weft/schedules/{id}/",
        "/api/weft/schedules/{id}/run-now/",
    ):
        assert path in paths
    schemas = response.json()["components"]["schemas"]
    assert {"RunOwner", "RunGuest", "ScheduleOwner", "ScheduleGuest", "Refusal"} <= set(schemas)


def test_openapi_schema_generates_without_warnings(tmp_path: Path) -> None:
    """drf-spectacular reports what it cannot describe on stderr, not as warnings."""
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(target))
    assert "/api/weft/runs/{id}/abort/" in target.read_text()


def test_example_project_serves_the_api_under_api() -> None:
    assert reverse("weft-run-list", urlconf="example_project.urls") == "/api/runs/"
    assert reverse("weft-schema", urlconf="example_project.urls") == "/api/schema/"


@pytest.mark.django_db(transaction=True)
def test_api_schedule_name_taken_by_a_concurrent_write_is_a_400(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name taken between DRF's unique check and the insert answers 400 naming it, not 500."""
    from django_weft.api.serializers import ScheduleOwnerSerializer

    user = get_user_model().objects.create_user("maker")
    for codename in ("add_schedule", "add_run"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(pk=user.pk))
    Schedule.objects.create(name="taken", job="tests.noop", every=timedelta(hours=1))
    monkeypatch.setattr(ScheduleOwnerSerializer, "run_validators", lambda self, value: None)
    response = client.post(
        "/api/weft/schedules/",
        {"name": "taken", "job": "tests.noop", "every": "01:00:00"},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "name" in response.json()
    assert Schedule.objects.count() == 1

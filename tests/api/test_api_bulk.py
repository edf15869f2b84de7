"""The API's bulk actions on runs (POST runs/bulk/{retry,abort,delete}/) and the retry links.

Principals: ``owner`` (add_run), who owns its runs; ``other`` (add_run), who owns others;
``staff`` (view_run, add_run, change_run, delete_run), who may act on anyone's. Bad bodies
are 400 naming what is wrong and change nothing.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.response import Response
from rest_framework.test import APIClient

from django_weft.models import AuditRecord, Run, RunStatus, Schedule
from django_weft.operations import start, start_many
from django_weft.operations.bulk import MAX_FILTER_RUNS
from tests.api.test_api import make_user
from tests.jobs import noop, sleep
from tests.test_bulk_operations import finished as failed
from tests.test_bulk_operations import savepoints

pytestmark = pytest.mark.django_db

RUNS = "/api/weft/runs/"


@pytest.fixture
def owner() -> Any:
    return make_user("owner", "add_run")


@pytest.fixture
def other() -> Any:
    return make_user("other", "add_run")


@pytest.fixture
def staff() -> Any:
    return make_user("staff", "view_run", "add_run", "change_run", "delete_run")


def bulk(user: Any, action: str, body: Any) -> Response:
    api = APIClient()
    api.force_authenticate(user)
    response: Response = api.post(f"{RUNS}bulk/{action}/", body, format="json")
    return response


def test_bulk_retry_by_ids_answers_done_and_refused(owner: Any, other: Any) -> None:
    """The owner's runs are retried; another user's run is refused as forbidden."""
    mine, theirs = failed(owner), failed(other)
    response = bulk(owner, "retry", {"ids": [str(mine.pk), str(theirs.pk)]})
    assert response.status_code == 200, response.data
    body = response.json()
    assert (body["action"], body["done"], body["refused"], body["batches"]) == ("retry", 1, 1, 1)
    assert body["reasons"]["forbidden"]["count"] == 1
    assert "django_weft.view_run" in body["reasons"]["forbidden"]["detail"]
    again = Run.objects.get(retry_of=mine)
    assert body["started"] == [str(again.pk)]
    assert not Run.objects.filter(retry_of=theirs).exists()


def test_staff_retries_everyone_matching_a_filter(owner: Any, other: Any, staff: Any) -> None:
    """A filter selects what the list shows with the same parameters, every batch of it."""
    runs = [failed(owner), failed(other), failed(owner)]
    start(sleep, {"seconds": 60}, owner=owner)  # queued: the filter leaves it out
    with override_settings(WEFT_BULK_BATCH_SIZE=2):
        response = bulk(staff, "retry", {"filter": {"status": "failed"}})
    body = response.json()
    assert (body["done"], body["refused"], body["batches"]) == (3, 0, 2)
    assert {run.retry_of_id for run in Run.objects.filter(retry_of__isnull=False)} == {
        run.pk for run in runs
    }
    listed = APIClient()
    listed.force_authenticate(staff)
    owners = listed.get(RUNS, {"status": "failed", "owner": "owner"}).json()["results"]
    response = bulk(staff, "abort", {"filter": {"status": "failed", "owner": "owner"}})
    assert response.json()["refused"] == len(owners) == 2
    assert set(response.json()["reasons"]) == {"finished"}


def test_bulk_abort_and_delete_by_owner_and_other(owner: Any, other: Any, staff: Any) -> None:
    """Abort needs ownership or change_run; delete ownership or delete_run, and a
    finished run."""
    queued = start(sleep, {"seconds": 60}, owner=owner)
    ended = failed(owner)
    refused = bulk(other, "abort", {"ids": [str(queued.pk)]}).json()
    assert (refused["done"], set(refused["reasons"])) == (0, {"forbidden"})
    assert Run.objects.get(pk=queued.pk).status == RunStatus.QUEUED
    assert bulk(owner, "abort", {"ids": [str(queued.pk)]}).json()["done"] == 1
    assert Run.objects.get(pk=queued.pk).status == RunStatus.ABORTED
    refused = bulk(other, "delete", {"ids": [str(ended.pk)]}).json()
    assert (refused["done"], set(refused["reasons"])) == (0, {"forbidden"})
    assert bulk(staff, "delete", {"ids": [str(ended.pk), str(queued.pk)]}).json()["done"] == 2
    assert not Run.objects.filter(pk__in=[ended.pk, queued.pk]).exists()


def test_bulk_delete_by_filter_without_the_permission_judges_no_run(owner: Any, other: Any) -> None:
    """`{"filter": {}}` from a user who owns none of the 40 runs and lacks delete_run:
    200, all 40 forbidden, in a handful of queries with no savepoint (no run judged one
    by one), and nothing deleted or recorded."""
    for _ in range(40):
        failed(other)
    with CaptureQueriesContext(connection) as captured:
        response = bulk(owner, "delete", {"filter": {}})
    assert response.status_code == 200, response.data
    body = response.json()
    assert (body["done"], body["refused"], body["batches"]) == (0, 40, 0)
    assert body["reasons"] == {
        "forbidden": {
            "count": 40,
            "detail": "you may not delete runs that are not yours (needs django_weft.delete_run)",
        }
    }
    assert savepoints(captured) == 0
    assert len(captured.captured_queries) <= 4  # the user's permissions, then two counts
    assert Run.objects.count() == 40
    assert not AuditRecord.objects.exists()


def test_bulk_by_filter_over_the_cap_is_a_400_naming_it(owner: Any) -> None:
    """More matching runs than the cap: 400 naming it, nothing done."""
    start_many(noop, [{}] * (MAX_FILTER_RUNS + 1), owner=owner)
    response = bulk(owner, "abort", {"filter": {"status": "queued"}})
    assert response.status_code == 400, response.data
    assert response.json() == {
        "detail": [
            "This filter matches more than 10000 runs, the most one bulk action by filter "
            "takes; narrow the filter (by status, job, owner or time) and repeat it, or "
            "name the runs by id."
        ]
    }
    assert not Run.objects.exclude(status=RunStatus.QUEUED).exists()


@pytest.mark.parametrize(
    ("action", "body", "field", "words"),
    [
        ("explode", {"ids": []}, "action", "Unknown bulk action 'explode'"),
        ("retry", {}, "non_field_errors", "Send ids"),
        ("retry", {"ids": [], "filter": {}}, "non_field_errors", "not both"),
        ("retry", {"ids": ["nope"]}, "ids", "0: 'nope'"),
        ("retry", {"ids": []}, "ids", "at least one"),
        ("retry", {"ids": "all"}, "ids", "Expected a list"),
        ("retry", {"ids": [str(uuid.uuid4())] * 1001}, "ids", "At most 1000"),
        ("retry", {"filter": {"state": "failed"}}, "filter", "Unknown parameter state"),
        ("retry", {"filter": {"status": "exploded"}}, "filter", "not a valid choice"),
        ("retry", {"filter": []}, "filter", "Expected an object"),
        ("retry", {"everything": True}, "everything", "Unknown field"),
        ("retry", ["x"], "non_field_errors", "Expected an object"),
    ],
)
def test_bad_bulk_bodies_are_400_naming_the_problem(
    owner: Any, action: str, body: Any, field: str, words: str
) -> None:
    run = failed(owner)
    response = bulk(owner, action, body)
    assert response.status_code == 400, response.data
    assert words in str(response.json()[field])
    assert Run.objects.get() == run


def test_anonymous_bulk_is_refused() -> None:
    response = APIClient().post(f"{RUNS}bulk/retry/", {"ids": []}, format="json")
    assert response.status_code == 403


def test_runs_show_retry_of_and_retries(owner: Any, other: Any) -> None:
    """The retried run lists its retries, the retry names its run, in both views; the
    retry keeps the original's schedule."""
    schedule = Schedule.objects.create(
        name="hourly", job="tests.noop", every=timedelta(hours=1), owner=owner
    )
    run = failed(owner, schedule=schedule)
    bulk(owner, "retry", {"ids": [str(run.pk)]})
    again = Run.objects.get(retry_of=run)
    for viewer in (owner, other):
        api = APIClient()
        api.force_authenticate(viewer)
        original = api.get(f"{RUNS}{run.pk}/").json()
        retry = api.get(f"{RUNS}{again.pk}/").json()
        assert (original["retry_of"], original["retries"]) == (None, [str(again.pk)])
        assert (retry["retry_of"], retry["retries"]) == (str(run.pk), [])
        assert retry["schedule"] == "hourly"
        listed = {row["id"]: row for row in api.get(RUNS).json()["results"]}
        assert listed[str(run.pk)]["retries"] == [str(again.pk)]


def test_bulk_endpoint_is_in_the_schema(staff: Any) -> None:
    api = APIClient()
    api.force_authenticate(staff)
    schema = api.get("/api/weft/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/weft/runs/bulk/{kind}/"]["post"]
    kind = next(parameter for parameter in operation["parameters"] if parameter["name"] == "kind")
    assert sorted(kind["schema"]["enum"]) == ["abort", "delete", "retry"]
    assert "200" in operation["responses"]
    assert "400" in operation["responses"]

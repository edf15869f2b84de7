"""The run list's ``queue`` and ``worker`` (issue 21): both on every run, both filters,
and an unknown query parameter refused with a 400 naming it instead of being ignored."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from django_weft.jobs.registry import registry
from django_weft.models import Run, WorkerProcess
from django_weft.operations import start

pytestmark = pytest.mark.django_db

RUNS = "/api/weft/runs/"


@pytest.fixture
def client() -> APIClient:
    api = APIClient()
    api.force_authenticate(get_user_model().objects.create_user("guest"))
    return api


def worker(pid: int) -> WorkerProcess:
    now = timezone.now()
    return WorkerProcess.objects.create(hostname="host", pid=pid, started_at=now, last_beat=now)


def ids(client: APIClient, query: str) -> list[str]:
    response = client.get(RUNS + query)
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


def test_runs_show_their_queue_and_worker(client: APIClient) -> None:
    """A guest sees both: which queue a run waits in and which worker claimed it."""
    claimed_by = worker(1)
    run = start(registry.get("tests.noop"))
    Run.objects.filter(pk=run.pk).update(worker=claimed_by)
    waiting = start(registry.get("tests.noop"))
    rows = {row["id"]: row for row in client.get(RUNS).json()["results"]}
    assert rows[str(run.pk)]["queue"] == "default"
    assert rows[str(run.pk)]["worker"] == str(claimed_by.pk)
    assert rows[str(waiting.pk)]["worker"] is None
    detail = client.get(f"{RUNS}{run.pk}/").json()
    assert (detail["queue"], detail["worker"]) == ("default", str(claimed_by.pk))


def test_the_list_filters_by_queue_and_by_worker(client: APIClient) -> None:
    first, second = worker(1), worker(2)
    on_first = start(registry.get("tests.noop"))
    on_second = start(registry.get("tests.noop"))
    elsewhere = start(registry.get("tests.noop"))
    Run.objects.filter(pk=on_first.pk).update(worker=first)
    Run.objects.filter(pk=on_second.pk).update(worker=second, queue="cpu")
    Run.objects.filter(pk=elsewhere.pk).update(queue="cpu")
    assert ids(client, "?queue=cpu") == [str(elsewhere.pk), str(on_second.pk)]
    assert ids(client, "?queue=default") == [str(on_first.pk)]
    assert ids(client, f"?worker={first.pk}") == [str(on_first.pk)]
    assert ids(client, f"?worker={second.pk}&queue=cpu") == [str(on_second.pk)]
    assert ids(client, "?queue=nowhere") == []


def test_an_unknown_parameter_is_400_naming_it(client: APIClient) -> None:
    """``?queu=cpu`` would otherwise answer with every run, as if it had matched."""
    start(registry.get("tests.noop"))
    response = client.get(RUNS + "?queu=cpu&stauts=done&limit=5")
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"queu", "stauts"}
    assert "Unknown parameter queu" in body["queu"][0]
    assert "queue" in body["queu"][0]
    # The pagination's and the format's parameters are accepted.
    assert client.get(RUNS + "?limit=1&offset=0&format=json").status_code == 200


def test_a_malformed_worker_is_400_naming_it(client: APIClient) -> None:
    response = client.get(RUNS + "?worker=not-an-id")
    assert response.status_code == 400
    assert set(response.json()) == {"worker"}


def test_openapi_schema_has_the_fields_and_filters(client: APIClient) -> None:
    schema = client.get("/api/weft/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    parameters = {item["name"] for item in schema["paths"][RUNS]["get"]["parameters"]}
    assert {"queue", "worker", "job", "status", "owner"} <= parameters
    guest = schema["components"]["schemas"]["RunGuest"]["properties"]
    assert {"queue", "worker"} <= set(guest)

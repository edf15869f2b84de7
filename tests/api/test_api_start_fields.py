"""``POST runs/`` is as strict as the run list: every key of the body is known, and a
start may set the run's priority, queue and the moment it may begin, where the job and
the user allow (:func:`django_weft.operations.parse_start`).

A start is checked for ``add_run`` before its job is looked up, and a job name no
process has (malformed or not) is a 400 naming ``job``. Every refusal writes nothing.
"""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from django_weft.engine.runs.claiming import claim, deployed_pairs
from django_weft.jobs.registry import registry
from django_weft.models import Run, WorkerProcess

pytestmark = pytest.mark.django_db

RUNS = "/api/weft/runs/"
ACCEPTED = "args, job, not_before, priority, queue"


def client_of(name: str, *codenames: str) -> APIClient:
    user = get_user_model().objects.create_user(name)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(pk=user.pk))
    return client


@pytest.fixture
def starter() -> APIClient:
    return client_of("starter", "add_run")


def post(client: APIClient, body: Any) -> Any:
    return client.post(RUNS, body, format="json")


def test_api_start_refuses_unknown_keys_naming_them_and_the_accepted_ones(
    starter: APIClient,
) -> None:
    """A misspelt field is refused, not dropped: ``priorty`` used to start a run at the
    job's priority, answering 201."""
    response = post(starter, {"job": "tests.noop", "priorty": 5, "request_id": "r"})
    assert response.status_code == 400
    assert response.json() == {
        "priorty": [f"Unknown field; a start accepts: {ACCEPTED}."],
        "request_id": [f"Unknown field; a start accepts: {ACCEPTED}."],
    }
    assert not Run.objects.exists()


def test_api_start_sets_priority_queue_and_not_before() -> None:
    """Each is stored on the run; the owner view shows ``not_before`` as ``retry_at``
    until a worker claims the run."""
    operator = client_of("operator", "add_run", "pause_queue")
    response = post(
        operator,
        {
            "job": "tests.noop",
            "priority": -7,
            "queue": " cpu ",
            "not_before": "2030-01-31T10:00:00+01:00",
        },
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["priority"], body["queue"], body["retry_at"]) == (
        -7,
        "cpu",
        "2030-01-31T09:00:00Z",
    )
    run = Run.objects.get()
    assert (run.priority, run.queue) == (-7, "cpu")
    assert run.run_after == run.retry_at == datetime(2030, 1, 31, 9, tzinfo=UTC)


def test_api_start_leaves_the_jobs_priority_and_queue_when_not_given(starter: APIClient) -> None:
    response = post(starter, {"job": "tests.noop"})
    assert response.status_code == 201
    run = Run.objects.get()
    job = registry.get("tests.noop")
    assert (run.priority, run.queue, run.run_after, run.retry_at) == (
        job.priority,
        job.queue,
        None,
        None,
    )


@pytest.mark.django_db(transaction=True)
def test_api_start_not_before_keeps_workers_from_claiming_it_until_then(
    starter: APIClient,
) -> None:
    """A run started not before a moment is claimed at that moment, not before."""
    now = timezone.now().replace(microsecond=0)
    later = now + timedelta(hours=1)
    response = post(starter, {"job": "tests.noop", "not_before": later.isoformat()})
    assert response.status_code == 201
    worker = WorkerProcess.objects.create(hostname="h", pid=1, started_at=now, last_beat=now)
    pairs = deployed_pairs(registry)
    assert claim(pairs, limit=5, worker=worker, now=now, queues=None) == []
    claimed = claim(pairs, limit=5, worker=worker, now=later, queues=None)
    assert [str(run.pk) for run in claimed] == [response.json()["id"]]


@pytest.mark.parametrize(
    ("priority", "message"),
    [
        (101, "priority must be a whole number from -100 to 100, not 101"),
        (-101, "priority must be a whole number from -100 to 100, not -101"),
        (2.5, "Expected a whole number, not float."),
        (True, "Expected a whole number, not bool."),
        ("5", "Expected a whole number, not str."),
        (None, "Expected a whole number, not null."),
    ],
)
def test_api_start_refuses_a_priority_out_of_range_or_not_whole(
    starter: APIClient, priority: object, message: str
) -> None:
    response = post(starter, {"job": "tests.noop", "priority": priority})
    assert (response.status_code, response.json()) == (400, {"priority": [message]})
    assert not Run.objects.exists()


def test_api_start_on_another_queue_needs_pause_queue(starter: APIClient) -> None:
    """The job's own queue is anyone's to name; another one is the operators', who decide
    which queues run (``pause_queue``)."""
    refused = post(starter, {"job": "tests.noop", "queue": "cpu"})
    assert (refused.status_code, refused.json()) == (
        400,
        {
            "queue": [
                'Job "tests.noop" runs on queue "default"; another queue needs '
                "django_weft.pause_queue."
            ]
        },
    )
    assert not Run.objects.exists()
    own = post(starter, {"job": "tests.noop", "queue": "default"})
    assert own.status_code == 201
    assert Run.objects.get().queue == "default"


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        ("", "This field may not be blank."),
        ("q" * 101, "Ensure this field has no more than 100 characters."),
        (7, "Expected text, not int."),
        (None, "This field may not be null."),
    ],
)
def test_api_start_refuses_a_malformed_queue(queue: object, message: str) -> None:
    operator = client_of("operator", "add_run", "pause_queue")
    response = post(operator, {"job": "tests.noop", "queue": queue})
    assert (response.status_code, response.json()) == (400, {"queue": [message]})
    assert not Run.objects.exists()


EXAMPLE = "2026-01-31T09:00:00Z or 2026-01-31T10:00:00+01:00"


@pytest.mark.parametrize(
    ("not_before", "message"),
    [
        ("2030-01-31T10:00:00", f"Give the moment's offset from UTC, such as {EXAMPLE}."),
        ("tomorrow", f"Expected an ISO 8601 moment, such as {EXAMPLE}."),
        ("2030-02-30T10:00:00Z", f"Expected an ISO 8601 moment, such as {EXAMPLE}."),
        ("9999-12-31T23:00:00-05:00", f"Expected an ISO 8601 moment, such as {EXAMPLE}."),
        (1_900_000_000, "Expected an ISO 8601 moment as text, not int."),
        (None, "Expected an ISO 8601 moment as text, not null."),
    ],
)
def test_api_start_refuses_a_not_before_that_is_no_aware_moment(
    starter: APIClient, not_before: object, message: str
) -> None:
    """A moment without its offset would be read in a zone the client did not choose."""
    response = post(starter, {"job": "tests.noop", "not_before": not_before})
    assert (response.status_code, response.json()) == (400, {"not_before": [message]})
    assert not Run.objects.exists()


def test_api_start_names_every_bad_field_at_once(starter: APIClient) -> None:
    response = post(
        starter, {"job": "tests.noop", "priority": 500, "not_before": "x", "queue": "", "x": 1}
    )
    assert response.status_code == 400
    assert set(response.json()) == {"priority", "not_before", "queue", "x"}


@pytest.mark.parametrize(
    ("job", "message"),
    [
        pytest.param(".x", 'no job named ".x" is registered', id="leading-dot"),
        pytest.param("..os", 'no job named "..os" is registered', id="relative-import"),
        pytest.param("this", 'no job named "this" is registered', id="a-module"),
        pytest.param("os.system", 'no job named "os.system" is registered', id="a-function"),
        pytest.param("", "This field may not be blank.", id="empty"),
        pytest.param("   ", "This field may not be blank.", id="blank"),
        pytest.param(
            "j" * 201, "Ensure this field has no more than 200 characters.", id="too-long"
        ),
        pytest.param(5, "Expected text, not int.", id="a-number"),
        pytest.param(["tests.noop"], "Expected text, not list.", id="a-list"),
        pytest.param(None, "This field may not be null.", id="null"),
    ],
)
def test_api_start_of_a_malformed_or_unknown_job_name_is_a_400_naming_job(
    starter: APIClient, job: object, message: str
) -> None:
    """Never a 500, never an import: a name resolves only against the jobs this process
    has."""
    response = post(starter, {"job": job})
    assert (response.status_code, response.json()) == (400, {"job": [message]})
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {"job": "tests.nope"},
        {"job": ".x"},
        {"job": "tests.noop", "priorty": 5},
        ["tests.noop"],
    ],
    ids=["unknown-job", "leading-dot", "unknown-key", "not-an-object"],
)
def test_api_start_checks_add_run_before_anything_about_the_job(body: Any) -> None:
    """A user who may not start runs is told so whatever the body names: no job is
    looked up for them."""
    guest = client_of("guest")
    response = post(guest, body)
    assert (response.status_code, response.json()) == (
        403,
        {"detail": "you may not start runs (needs django_weft.add_run)"},
    )
    assert not Run.objects.exists()


def test_api_browsable_forms_start_a_run_as_they_come() -> None:
    """The browsable API's raw JSON form, with a job typed in, and its HTML form (job
    only, with the CSRF token every such form carries) both start a run: neither sends a
    key a start refuses."""
    user = get_user_model().objects.create_user("browser")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    page = browser.get(RUNS, headers={"accept": "text/html"})
    raw = re.search(r'<textarea[^>]*name="_content"[^>]*>(.*?)</textarea>', page.text, re.S)
    assert raw is not None
    body = json.loads(html.unescape(raw.group(1)))
    assert body == {"job": "", "args": {}}
    token = browser.cookies["csrftoken"].value
    typed = browser.post(
        RUNS,
        json.dumps({**body, "job": "tests.noop"}),
        content_type="application/json",
        headers={"x-csrftoken": token},
    )
    assert typed.status_code == 201, typed.content
    inputs = re.findall(r'<input[^>]*name="([a-z_]+)"', page.text)
    assert {"csrfmiddlewaretoken", "job"} <= set(inputs)
    assert not {"priority", "queue", "not_before"} & set(inputs)
    form = browser.post(RUNS, {"csrfmiddlewaretoken": token, "job": "tests.noop"})
    assert form.status_code == 201, form.content
    assert Run.objects.count() == 2

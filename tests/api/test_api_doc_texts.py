"""docs/api.md says exactly what the API answers: its run views' field lists are the
projections' keys, its start keys are the ones the start validator accepts, and each
error body it shows for a start is the body a real request gets, word for word.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import override_settings
from rest_framework.test import APIClient

from django_weft import operations
from django_weft.api.parsers import MAX_JSON_DEPTH
from django_weft.live.projections import GUEST_RUN_KEYS, OWNER_RUN_KEYS

pytestmark = pytest.mark.django_db

PAGE = (Path(__file__).resolve().parent.parent.parent / "docs" / "api.md").read_text()
RUNS = "/api/weft/runs/"


def names_after(lead: str) -> list[str]:
    """The comma-separated names in the first backticks after ``lead`` on the page."""
    found = re.search(re.escape(lead) + r"[^`]*`([^`]*)`", PAGE)
    assert found, lead
    return [name.strip() for name in found.group(1).split(",")]


def test_api_doc_lists_every_field_of_each_run_view_in_order() -> None:
    """The API's views are the projections' with the retry links (the ``version`` was
    missing from the page)."""
    guest = names_after("**Guest view of a run**:")
    assert guest == [*GUEST_RUN_KEYS, "retry_of", "retries"]
    added = names_after("**Owner view** adds")
    assert [*GUEST_RUN_KEYS, *added] == list(OWNER_RUN_KEYS)


def test_api_doc_lists_the_keys_a_start_accepts() -> None:
    table = PAGE[PAGE.index("#### Starting a run") :].split("\n\n")[2]
    keys = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert sorted(keys) == sorted(operations.START_FIELDS)


def documented(body: str) -> Any:
    """``body`` as the page's error table shows it, read as JSON."""
    assert f"`{body}`" in PAGE, body
    return json.loads(body)


#: (a body of the page's error table, the request that gets it)
ERRORS = [
    (r'{"job": ["no job named \"x\" is registered"]}', {"job": "x"}),
    ('{"job": ["This field may not be blank."]}', {"job": " "}),
    ('{"job": ["Expected text, not int."]}', {"job": 5}),
    ('{"job": ["Ensure this field has no more than 200 characters."]}', {"job": "j" * 201}),
    (
        '{"priorty": ["Unknown field; a start accepts: args, job, not_before, priority, queue."]}',
        {"job": "tests.noop", "priorty": 5},
    ),
    (
        '{"priority": ["priority must be a whole number from -100 to 100, not 101"]}',
        {"job": "tests.noop", "priority": 101},
    ),
    (
        '{"priority": ["Expected a whole number, not float."]}',
        {"job": "tests.noop", "priority": 2.5},
    ),
    (
        r'{"queue": ["Job \"tests.noop\" runs on queue \"default\"; another queue needs '
        r'django_weft.pause_queue."]}',
        {"job": "tests.noop", "queue": "cpu"},
    ),
    (
        '{"not_before": ["Give the moment\'s offset from UTC, such as 2026-01-31T09:00:00Z or '
        '2026-01-31T10:00:00+01:00."]}',
        {"job": "tests.noop", "not_before": "2026-01-31T09:00:00"},
    ),
]


@pytest.mark.parametrize(("body", "request_body"), ERRORS, ids=[b for b, _ in ERRORS])
def test_api_doc_error_bodies_are_what_a_start_answers(body: str, request_body: Any) -> None:
    user = get_user_model().objects.create_user("starter")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(pk=user.pk))
    response = client.post(RUNS, request_body, format="json")
    assert (response.status_code, response.json()) == (400, documented(body))


def test_api_doc_error_body_of_a_schedule_of_no_job() -> None:
    """A schedule's create words an unknown job its own way, as the page shows."""
    user = get_user_model().objects.create_user("planner")
    user.user_permissions.add(*Permission.objects.filter(codename__in=["add_run", "add_schedule"]))
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(pk=user.pk))
    for job in ("x", ".x"):
        response = client.post(
            "/api/weft/schedules/", {"name": "n", "job": job, "every": "1:00:00"}, format="json"
        )
        expected = documented(r'{"job": ["No job named \"x\" is registered."]}')
        assert (response.status_code, response.json()) == (
            400,
            {"job": [expected["job"][0].replace('"x"', f'"{job}"')]},
        )


def test_api_doc_error_bodies_of_the_permission_depth_and_size_limits() -> None:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.create_user("guest"))
    forbidden = client.post(RUNS, {"job": "x"}, format="json")
    assert forbidden.json() == documented(
        '{"detail": "you may not start runs (needs django_weft.add_run)"}'
    )
    deep = client.post(RUNS, "[" * 100 + "]" * 100, content_type="application/json")
    assert deep.json() == documented(
        '{"detail": "JSON parse error - the body nests arrays and objects more than '
        f'{MAX_JSON_DEPTH} levels deep"}}'
    )
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2621440):
        large = client.post(RUNS, "[" * 2621441, content_type="application/json")
    assert large.status_code == 413
    assert large.json() == documented(
        '{"detail": "The request body is larger than 2621440 bytes, the most this API '
        'accepts (DATA_UPLOAD_MAX_MEMORY_SIZE).", "code": "too_large"}'
    )

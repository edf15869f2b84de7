"""Hostile bodies: JSON nested past the API's limit is a 400 naming the limit, not a 500.

Python's JSON decoder recurses once per array or object, so a body 100,000 deep used to
end in ``RecursionError`` (a 500). Every refusal is checked to have written nothing.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.exceptions import ParseError
from rest_framework.test import APIClient

from django_weft.api.parsers import MAX_JSON_DEPTH, BoundedJSONParser, nests_deeper
from django_weft.models import Run, Schedule

pytestmark = pytest.mark.django_db

RUNS = "/api/weft/runs/"
SCHEDULES = "/api/weft/schedules/"
TOO_DEEP = (
    f"JSON parse error - the body nests arrays and objects more than {MAX_JSON_DEPTH} levels deep"
)


@pytest.fixture
def owner() -> APIClient:
    user = get_user_model().objects.create_user("owner")
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_run", "add_schedule", "change_schedule"])
    )
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(pk=user.pk))
    return client


def nested(depth: int) -> str:
    """A start of ``tests.anything`` whose body nests ``depth`` levels in all."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return f'{{"job": "tests.anything", "args": {{"x": {inner}}}}}'


def send(client: APIClient, method: str, url: str, body: str) -> Any:
    return getattr(client, method)(url, body, content_type="application/json")


def test_api_start_nested_100000_deep_is_a_400_naming_the_limit(owner: APIClient) -> None:
    response = send(owner, "post", RUNS, "[" * 100_000 + "]" * 100_000)
    assert response.status_code == 400
    assert response.json() == {"detail": TOO_DEEP}
    unclosed = send(owner, "post", RUNS, '{"job": "tests.anything", "args": ' + "{" * 100_000)
    assert (unclosed.status_code, unclosed.json()) == (400, {"detail": TOO_DEEP})
    assert not Run.objects.exists()


def test_api_start_at_the_limit_is_read_one_past_it_refused(owner: APIClient) -> None:
    at_limit = send(owner, "post", RUNS, nested(MAX_JSON_DEPTH))
    assert at_limit.status_code == 201, at_limit.json()
    past = send(owner, "post", RUNS, nested(MAX_JSON_DEPTH + 1))
    assert (past.status_code, past.json()) == (400, {"detail": TOO_DEEP})
    assert Run.objects.count() == 1


def test_api_brackets_inside_strings_do_not_count(owner: APIClient) -> None:
    """A string may hold any number of brackets, quoted quotes and backslashes."""
    text = '[{"\\"' * 10_000 + "\\\\"
    body = json.dumps({"job": "tests.anything", "args": {"text": text}})
    response = send(owner, "post", RUNS, body)
    assert response.status_code == 201, response.json()
    assert Run.objects.get().args == {"text": text}


def test_api_schedule_writes_nested_too_deep_are_400(owner: APIClient) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    created = send(owner, "post", SCHEDULES, deep)
    assert (created.status_code, created.json()) == (400, {"detail": TOO_DEEP})
    schedule = Schedule.objects.create(name="hourly", job="tests.noop", every="1:00:00")
    edited = send(owner, "patch", f"{SCHEDULES}{schedule.pk}/", f'{{"args": {deep}}}')
    assert (edited.status_code, edited.json()) == (400, {"detail": TOO_DEEP})
    assert Schedule.objects.get().args == {}


def test_api_malformed_json_is_still_drfs_400(owner: APIClient) -> None:
    response = send(owner, "post", RUNS, '{"job": ')
    assert response.status_code == 400
    assert response.json()["detail"].startswith("JSON parse error - Expecting value")
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("text", "deeper"),
    [
        ("[]", False),
        ("[" * 3 + "]" * 3, False),
        ("[" * 4 + "]" * 4, True),
        ("[[]] [[]] [[]] {}", False),
        ('["[[[[", "{{{{"]', False),
        ('["\\"[[[[" ]', False),
        ('"[[[[', False),
        ('[{"a": [{"b": 1}]}]', True),
        ('[{"a": [1]}, [[]]]', False),
        ("[[[[", True),
    ],
)
def test_api_depth_scanner(text: str, deeper: bool) -> None:
    """Depth counts arrays and objects open at once; brackets in strings never count."""
    assert nests_deeper(text, 3) is deeper


def test_api_parser_reads_the_body_as_drf_does() -> None:
    parser = BoundedJSONParser()
    assert parser.parse(io.BytesIO('{"é": [1]}'.encode())) == {"é": [1]}
    with pytest.raises(ParseError, match="more than 64 levels deep"):
        parser.parse(io.BytesIO(b"[" * 65 + b"]" * 65))
    with pytest.raises(ParseError, match="JSON parse error"):
        parser.parse(io.BytesIO(b'"\xff"'))

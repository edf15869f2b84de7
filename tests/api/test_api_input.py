"""Hostile bodies: JSON nested past the API's limit is a 400 naming the limit, not a 500,
and a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` a JSON 413, read no further than the limit.

Python's JSON decoder recurses once per array or object, so a body 100,000 deep used to
end in ``RecursionError`` (a 500); an oversize body got Django's HTML 400 page and an
ERROR with a traceback in the log. Every refusal is checked to have written nothing.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.wsgi import WSGIRequest
from django.test import Client, override_settings
from rest_framework.exceptions import ParseError
from rest_framework.test import APIClient, force_authenticate

from django_weft.api.parsers import MAX_JSON_DEPTH, BodyTooLarge, BoundedJSONParser, nests_deeper
from django_weft.api.views import RunViewSet
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


# -- bodies over DATA_UPLOAD_MAX_MEMORY_SIZE ---------------------------------------------------

LIMIT = 1000
TOO_LARGE = {
    "detail": (
        f"The request body is larger than {LIMIT} bytes, the most this API accepts "
        "(DATA_UPLOAD_MAX_MEMORY_SIZE)."
    ),
    "code": "too_large",
}


def oversize_start() -> str:
    return json.dumps({"job": "tests.anything", "args": {"x": "a" * LIMIT}})


def no_traceback(records: list[logging.LogRecord]) -> bool:
    """Nothing logged at ERROR, and nothing with a traceback."""
    return not [r for r in records if r.levelno >= logging.ERROR or r.exc_info]


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_api_body_over_the_limit_is_a_json_413_with_no_traceback_logged(
    owner: APIClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Django's own refusal was its HTML 400 page and an ERROR with a traceback."""
    with caplog.at_level(logging.DEBUG):
        response = send(owner, "post", RUNS, oversize_start())
        schedule = send(owner, "post", SCHEDULES, oversize_start())
    assert (response.status_code, response["Content-Type"]) == (413, "application/json")
    assert response.json() == TOO_LARGE
    assert (schedule.status_code, schedule.json()) == (413, TOO_LARGE)
    assert no_traceback(caplog.records), [r.getMessage() for r in caplog.records]
    assert not Run.objects.exists()
    assert not Schedule.objects.exists()


def test_api_body_too_deep_is_a_json_400_with_no_traceback_logged(
    owner: APIClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        response = send(owner, "post", RUNS, "[" * 100_000 + "]" * 100_000)
    assert (response.status_code, response["Content-Type"]) == (400, "application/json")
    assert response.json() == {"detail": TOO_DEEP}
    assert no_traceback(caplog.records), [r.getMessage() for r in caplog.records]


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_api_form_body_over_the_limit_is_refused_before_the_csrf_check_reads_it() -> None:
    """A form's CSRF check reads the body (a signed-in browser's session): a body over the
    limit is refused by its length before that, with the same JSON 413."""
    user = get_user_model().objects.create_user("browser")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(RUNS, {"job": "tests.noop", "args": "a" * LIMIT})
    assert (response.status_code, response.json()) == (413, TOO_LARGE)
    assert not Run.objects.exists()


class Endless(io.RawIOBase):
    """A request body that never ends, counting what is read of it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        buffer[:] = b"[" * len(buffer)
        self.read_bytes += len(buffer)
        return len(buffer)


def start_view() -> Any:
    return RunViewSet.as_view({"post": "create"})


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_api_body_whose_length_is_over_the_limit_is_not_read_at_all() -> None:
    body = Endless()
    request = WSGIRequest(
        {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": RUNS,
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(10**12),
            "wsgi.input": body,
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "80",
        }
    )
    force_authenticate(request, get_user_model().objects.create_user("o"))
    response = start_view()(request)
    assert (response.status_code, response.data) == (413, TOO_LARGE)
    assert body.read_bytes == 0


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_api_body_found_over_the_limit_while_read_is_a_json_413() -> None:
    """A body longer than its Content-Length says (ASGI keeps the whole body it was
    sent): Django's refusal as it reads it becomes the same 413."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": RUNS,
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"12")],
    }
    request = ASGIRequest(scope, io.BytesIO(oversize_start().encode()))
    user = get_user_model().objects.create_user("o")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    force_authenticate(request, get_user_model().objects.get(pk=user.pk))
    response = start_view()(request)
    assert (response.status_code, response.data) == (413, TOO_LARGE)
    assert not Run.objects.exists()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_api_parser_reads_at_most_one_byte_past_the_limit() -> None:
    """Given a stream of any length, the parser stops one byte past the limit."""
    stream = io.BytesIO(b"[" * (50 * LIMIT))
    with pytest.raises(BodyTooLarge):
        BoundedJSONParser().parse(stream)
    assert stream.tell() == LIMIT + 1
    at_limit = json.dumps({"x": "a" * (LIMIT - 9)}).encode()
    assert len(at_limit) == LIMIT
    assert BoundedJSONParser().parse(io.BytesIO(at_limit)) == {"x": "a" * (LIMIT - 9)}

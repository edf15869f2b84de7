"""A socket's ``start`` frame is read by the API's start validator
(:func:`django_weft.operations.parse_start`), so it gets the same rules: every field
known, priority, queue and ``not_before`` where the job and the user allow, ``add_run``
checked before the job is looked up, and a malformed job name an ``invalid`` error frame
naming ``job``. Every refusal writes nothing, and the socket goes on serving.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from django_weft.models import Run
from tests.live_client import CommunicatorSocket, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ACCEPTED = "args, job, not_before, priority, queue, request_id"


def make_user(name: str, *codenames: str) -> Any:
    user = get_user_model().objects.create_user(name)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return get_user_model().objects.get(pk=user.pk)


async def answer_to(socket: CommunicatorSocket, frame: dict[str, Any]) -> dict[str, Any]:
    await socket.send({"type": "start", **frame})
    return await socket.until(lambda f: f["type"] in ("started", "error"))


async def run_count() -> int:
    return await sync_to_async(Run.objects.count)()


async def test_start_frame_refuses_unknown_fields_naming_them_and_the_accepted_ones(
    sockets: list[CommunicatorSocket],
) -> None:
    socket = await open_socket(sockets, await sync_to_async(make_user)("starter", "add_run"))
    error = await answer_to(socket, {"job": "tests.noop", "request_id": "r", "priorty": 5})
    assert (error["type"], error["code"], error["request_id"]) == ("error", "invalid", "r")
    assert error["fields"] == {"priorty": [f"Unknown field; a start accepts: {ACCEPTED}."]}
    assert await run_count() == 0


async def test_start_frame_sets_priority_queue_and_not_before(
    sockets: list[CommunicatorSocket],
) -> None:
    operator = await sync_to_async(make_user)("operator", "add_run", "pause_queue")
    socket = await open_socket(sockets, operator)
    started = await answer_to(
        socket,
        {
            "job": "tests.noop",
            "request_id": "r",
            "priority": 9,
            "queue": "cpu",
            "not_before": "2030-01-31T09:00:00Z",
        },
    )
    assert started["type"] == "started", started
    assert (started["request_id"], started["run"]["priority"], started["run"]["queue"]) == (
        "r",
        9,
        "cpu",
    )
    assert started["run"]["retry_at"] == "2030-01-31T09:00:00Z"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"queue": "cpu"}, "queue"),
        ({"priority": 1000}, "priority"),
        ({"not_before": "2030-01-31T09:00:00"}, "not_before"),
        ({"job": ".x"}, "job"),
        ({"job": "this"}, "job"),
        ({"job": "  "}, "job"),
        ({"job": "j" * 201}, "job"),
        ({"job": 5}, "job"),
    ],
)
async def test_start_frame_refusals_name_the_field(
    sockets: list[CommunicatorSocket], fields: dict[str, Any], named: str
) -> None:
    """The API's 400s, as ``invalid`` error frames naming the same field; the socket
    still starts the next good frame."""
    socket = await open_socket(sockets, await sync_to_async(make_user)("starter", "add_run"))
    error = await answer_to(socket, {"job": "tests.noop", "request_id": "r", **fields})
    assert (error["type"], error["code"]) == ("error", "invalid"), error
    assert list(error["fields"]) == [named]
    assert await run_count() == 0
    started = await answer_to(socket, {"job": "tests.noop", "request_id": "after"})
    assert started["type"] == "started"


@pytest.mark.parametrize(
    "fields",
    [
        {"job": "tests.nope", "request_id": "r"},
        {"job": ".x", "request_id": "r"},
        {"job": "tests.noop", "request_id": "r", "priorty": 5},
        {"job": {"x": 1}, "request_id": "r"},
    ],
    ids=["unknown-job", "leading-dot", "unknown-field", "job-not-text"],
)
async def test_start_frame_checks_add_run_before_anything_about_the_job(
    sockets: list[CommunicatorSocket], fields: dict[str, Any]
) -> None:
    """A guest is told it may not start runs, whatever job its frame names."""
    socket = await open_socket(sockets, await sync_to_async(make_user)("guest"))
    error = await answer_to(socket, fields)
    assert (error["code"], error["request_id"]) == ("forbidden", "r")
    assert error["message"] == "you may not start runs (needs django_weft.add_run)"
    assert await run_count() == 0

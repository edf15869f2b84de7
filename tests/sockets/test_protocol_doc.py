"""docs/live.md says exactly what the socket sends: the fields of a run frame in both
views, the state frame, the fields a ``start`` takes and the error a start gets for a
field it does not take, word for word.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from django_weft import operations
from django_weft.live import projections
from django_weft.live.projections import GUEST_RUN_KEYS, OWNER_RUN_KEYS
from django_weft.models import Document
from tests.live_client import CommunicatorSocket, open_socket

PAGE = (Path(__file__).resolve().parent.parent.parent / "docs" / "live.md").read_text()


def example_after(lead: str) -> Any:
    """The first ```json block after ``lead`` on the page, read."""
    found = re.search(re.escape(lead) + r".*?```json\n(.*?)```", PAGE, re.S)
    assert found, lead
    return json.loads(found.group(1))


def test_live_doc_run_frame_has_the_owner_views_fields_in_order() -> None:
    frame = example_after("**`run`**, whenever a run changes")
    assert list(frame) == ["type", "run"]
    assert list(frame["run"]) == list(OWNER_RUN_KEYS)


def test_live_doc_lists_the_guest_views_fields_in_order() -> None:
    found = re.search(r"A guest's `run` frame has only `([^`]*)`", PAGE)
    assert found
    assert [name.strip() for name in found.group(1).split(",")] == list(GUEST_RUN_KEYS)


def test_live_doc_state_frame_is_the_state_projection() -> None:
    frame = example_after("**`state`**, whenever a run's state document changes")
    state = projections.state(Document(key="run:x", revision=1, data={}), "x")
    assert list(frame) == ["type", *state]


def test_live_doc_lists_the_fields_a_start_takes() -> None:
    found = re.search(r"A `start` takes (.*?)\. Any other field", PAGE, re.S)
    assert found
    named = re.findall(r"`([a-z_]+)`", found.group(1))
    assert sorted(named) == sorted([*operations.START_FIELDS, "request_id"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_live_doc_error_for_an_unknown_start_field_is_what_the_socket_sends(
    sockets: list[CommunicatorSocket],
) -> None:
    def starter() -> Any:
        user = get_user_model().objects.create_user("starter")
        user.user_permissions.add(Permission.objects.get(codename="add_run"))
        return get_user_model().objects.get(pk=user.pk)

    socket = await open_socket(sockets, await sync_to_async(starter)())
    await socket.send({"type": "start", "job": "tests.noop", "request_id": "r1", "priorty": 5})
    error = await socket.until(lambda f: f["type"] == "error")
    assert error == example_after("Any other field is refused with an `invalid` error")

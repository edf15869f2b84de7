"""Publishing (django_weft.live.publisher): who is published to, and when nobody can hear.

Publishing through a Redis outage is in tests/faults/test_publishing_outage.py.
"""

from __future__ import annotations

import asyncio

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from django_weft.jobs.registry import registry
from django_weft.operations import start
from tests.live_client import open_socket

pytestmark = pytest.mark.django_db(transaction=True)

IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def queries_of_a_start() -> int:
    with CaptureQueriesContext(connection) as queries:
        start(registry.get("tests.noop"), {})
    return len(queries)


@override_settings(CHANNEL_LAYERS=IN_MEMORY)
def test_in_memory_layer_is_not_published_to_once_the_sockets_loop_closed() -> None:
    """A socket that came and went with its event loop leaves nobody to publish to."""
    user = get_user_model().objects.create_user("visitor")
    nobody_listening = queries_of_a_start()

    async def visit() -> None:
        socket = await open_socket([], user)
        await socket.close()

    asyncio.run(visit())

    assert queries_of_a_start() == nobody_listening, "no run is read back to publish it"

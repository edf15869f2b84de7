"""Every "now" of a request comes from the process's clock: a rehearsal is a rehearsal.

With a driven clock installed (as ``runjobs`` installs its worker's), a run started
through the API, the admin or a live socket is created at the driven time, not at the
machine's.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from rest_framework.test import APIClient

from django_weft.engine.outcomes.finishing import finish
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus, Schedule
from django_weft.operations import start
from django_weft.testing import DrivenClock
from django_weft.timing import clocks
from tests.live_client import CommunicatorSocket, open_socket

#: Long before the test runs, so that a run stamped with the machine's time would show.
DRIVEN = datetime(2021, 6, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def driven() -> Iterator[DrivenClock]:
    """A driven clock installed for the process, and uninstalled after the test."""
    clock = DrivenClock(DRIVEN)
    clocks.install_clock(clock)
    yield clock
    clocks.install_clock(None)


@pytest.fixture
def root() -> Any:
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw")


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_api_start_is_created_at_the_driven_time(driven: DrivenClock) -> None:
    """POST runs/ starts a run whose created_at is the installed clock's now."""
    user = get_user_model().objects.create_user("starter")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    api = APIClient()
    api.force_authenticate(get_user_model().objects.get(pk=user.pk))
    response = api.post("/api/weft/runs/", {"job": "tests.noop"}, format="json")
    assert response.status_code == 201, response.content
    assert Run.objects.get().created_at == DRIVEN
    assert response.json()["created_at"] == "2021-06-01T09:30:00Z"


@pytest.mark.django_db
def test_admin_run_now_is_created_and_due_at_the_driven_time(
    driven: DrivenClock, root: Any
) -> None:
    """A schedule's *run now* in the admin starts a run created (and due) at the driven now."""
    schedule = Schedule.objects.create(name="hourly", job="tests.noop", every=timedelta(hours=1))
    response = signed_in(root).post(f"/admin/django_weft/schedule/{schedule.pk}/run-now/")
    assert response.status_code == 302, response.content
    run = Run.objects.get(schedule=schedule)
    assert (run.created_at, run.due) == (DRIVEN, DRIVEN)
    assert Schedule.objects.get(pk=schedule.pk).last_started == DRIVEN


@pytest.mark.django_db
def test_admin_retry_is_created_at_the_driven_time(driven: DrivenClock, root: Any) -> None:
    """A run's *retry* in the admin starts a new run created at the driven now."""
    failed = start("tests.noop")
    finish(failed.pk, RunStatus.FAILED, now=DRIVEN, changes=Changes())
    driven.skip(timedelta(minutes=5))
    response = signed_in(root).post(f"/admin/django_weft/run/{failed.pk}/retry/")
    assert response.status_code == 302, response.content
    retried = Run.objects.exclude(pk=failed.pk).get()
    assert retried.created_at == DRIVEN + timedelta(minutes=5)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_socket_start_is_created_at_the_driven_time(
    driven: DrivenClock, sockets: list[CommunicatorSocket]
) -> None:
    """A start frame on the live socket starts a run created at the driven now."""

    def starter() -> Any:
        user = get_user_model().objects.create_user("starter")
        user.user_permissions.add(Permission.objects.get(codename="add_run"))
        return get_user_model().objects.get(pk=user.pk)

    socket = await open_socket(sockets, await sync_to_async(starter)())
    await socket.send({"type": "start", "job": "tests.noop", "request_id": "r-1"})
    started = await socket.until(lambda frame: frame["type"] in ("started", "error"))
    assert started["type"] == "started", started
    assert started["run"]["created_at"] == "2021-06-01T09:30:00Z"
    run = await sync_to_async(Run.objects.get)()
    assert run.created_at == DRIVEN

"""A signal through every door: the REST API, the live socket and the run page, each
checked by the service layer, each refusal naming what is wrong and writing nothing; and
what a waiting run shows (its phase and what it waits for, to owner and guest alike; the
metrics' waiting gauge)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from django_weft.jobs.registry import registry
from django_weft.live import projections
from django_weft.models import AuditAction, AuditRecord, Run, RunStatus, Signal
from django_weft.operations import start
from django_weft.testing import Rehearsal
from tests.live_client import CommunicatorSocket, open_socket
from tests.observe.conftest import scrape, value

pytestmark = pytest.mark.django_db(transaction=True)

RUNS = "/api/weft/runs/"
NOW = timedelta(0)


def make_user(name: str, *codenames: str) -> Any:
    user = get_user_model().objects.create_user(name)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture
def owner() -> Any:
    return make_user("owner", "add_run")


@pytest.fixture
def guest() -> Any:
    return make_user("guest")


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def waiting_run(owner: Any, rehearsal: Rehearsal, **args: Any) -> Run:
    """A run of ``tests.flows.approval`` owned by ``owner``, waiting for ``approval``."""
    run = start(registry.get("tests.flows.approval"), args, owner=owner)
    rehearsal.advance(NOW)
    waiting = Run.objects.get(pk=run.pk)
    assert waiting.status == RunStatus.WAITING
    return waiting


def test_api_signal_wakes_the_run_and_answers_202_with_its_view(
    owner: Any, guest: Any, rehearsal: Rehearsal
) -> None:
    run = waiting_run(owner, rehearsal, timeout=3600)
    seen = api(guest).get(f"{RUNS}{run.pk}/").json()
    assert (seen["phase"], seen["waiting_for"]) == ("waiting", "approval")
    assert seen["wake_at"] is not None, "a guest sees why and until when it waits"
    assert "result" not in seen

    reply = api(owner).post(
        f"{RUNS}{run.pk}/signal/", {"name": "approval", "payload": {"ok": 1}}, format="json"
    )
    assert reply.status_code == 202, reply.content
    assert (reply.json()["phase"], reply.json()["waiting_for"]) == ("queued", None)
    rehearsal.advance(NOW)
    assert Run.objects.get(pk=run.pk).result == {"ok": 1}
    record = AuditRecord.objects.get(action=AuditAction.SIGNAL)
    assert (record.actor, record.via) == (owner, "api")


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"payload": 1}, "name", "required"),
        ({"name": "approval", "paylaod": 1}, "paylaod", "a signal accepts: name, payload"),
        ({"name": "approval", "payload": "a\u0000b"}, "payload", "NUL"),
        ({"name": "x" * 101}, "name", "at most 100 characters"),
        (["approval"], "non_field_errors", "Expected an object"),
    ],
)
def test_api_signal_with_bad_input_is_400_naming_the_field(
    owner: Any, rehearsal: Rehearsal, body: Any, field: str, words: str
) -> None:
    run = waiting_run(owner, rehearsal)
    reply = api(owner).post(f"{RUNS}{run.pk}/signal/", body, format="json")
    assert reply.status_code == 400, reply.content
    assert words in " ".join(reply.json()[field])
    assert not Signal.objects.exists()
    assert Run.objects.get(pk=run.pk).status == RunStatus.WAITING


def test_api_signal_refusals_are_403_and_409(owner: Any, guest: Any, rehearsal: Rehearsal) -> None:
    run = waiting_run(owner, rehearsal)
    refused = api(guest).post(f"{RUNS}{run.pk}/signal/", {"name": "approval"}, format="json")
    assert refused.status_code == 403
    assert "change_run" in refused.json()["detail"]
    Run.objects.filter(pk=run.pk).update(status=RunStatus.DONE)
    finished = api(owner).post(f"{RUNS}{run.pk}/signal/", {"name": "approval"}, format="json")
    assert (finished.status_code, finished.json()["code"]) == (409, "finished")
    assert not Signal.objects.exists()
    assert not AuditRecord.objects.filter(action=AuditAction.SIGNAL).exists()


@pytest.mark.asyncio
async def test_socket_signal_frame_sends_it_and_refuses_a_guest(
    owner: Any, guest: Any, rehearsal: Rehearsal, sockets: list[CommunicatorSocket]
) -> None:
    run = await sync_to_async(waiting_run)(owner, rehearsal)
    theirs = await open_socket(sockets, guest)
    await theirs.send({"type": "signal", "run": str(run.pk), "name": "approval", "request_id": "g"})
    refused = await theirs.until(lambda frame: frame["type"] == "error")
    assert (refused["code"], refused["request_id"]) == ("forbidden", "g")

    mine = await open_socket(sockets, owner)
    await mine.send({"type": "signal", "run": str(run.pk), "name": "", "request_id": "e"})
    invalid = await mine.until(lambda frame: frame["type"] == "error")
    assert (invalid["code"], invalid["request_id"]) == ("invalid", "e")
    await mine.send(
        {
            "type": "signal",
            "run": str(run.pk),
            "name": "approval",
            "payload": [1],
            "request_id": "s",
        }
    )
    sent = await mine.until(lambda frame: frame["type"] in ("signal_sent", "error"))
    assert sent == {"type": "signal_sent", "request_id": "s", "run": str(run.pk)}
    queued = await mine.until(
        lambda frame: frame["type"] == "run" and frame["run"]["id"] == str(run.pk)
    )
    assert (queued["run"]["phase"], queued["run"]["waiting_for"]) == ("queued", None)
    signals = await sync_to_async(list)(Signal.objects.values_list("name", "payload"))
    assert signals == [("approval", [1])]


def test_run_page_shows_the_wait_and_sends_a_signal(owner: Any, rehearsal: Rehearsal) -> None:
    run = waiting_run(owner, rehearsal)
    owner.is_staff = True
    owner.save()
    owner.user_permissions.add(Permission.objects.get(codename="view_run"))
    client = Client()
    client.force_login(owner)
    page = client.get(reverse("admin:django_weft_run_change", args=[run.pk])).content.decode()
    assert "Waits for the signal <code>approval</code>." in page
    assert 'value="approval"' in page, "the form names the awaited signal"

    signal_url = reverse("admin:django_weft_run_signal", args=[run.pk])
    bad = client.post(signal_url, {"name": "approval", "payload": "{oops"}, follow=True)
    assert "the payload is not JSON" in bad.content.decode()
    assert not Signal.objects.exists()
    done = client.post(signal_url, {"name": "approval", "payload": '"go"'}, follow=True)
    assert "Signal &quot;approval&quot; sent to run" in done.content.decode()
    assert AuditRecord.objects.get(action=AuditAction.SIGNAL).via == "admin"
    rehearsal.advance(NOW)
    page = client.get(reverse("admin:django_weft_run_change", args=[run.pk])).content.decode()
    assert "Steps and waits" in page
    assert "approval#1" in page


def test_projections_and_metrics_show_waiting_runs(owner: Any, rehearsal: Rehearsal) -> None:
    run = waiting_run(owner, rehearsal, timeout=60)
    guest_view = projections.guest_run(
        Run.objects.select_related("owner", "schedule").get(pk=run.pk)
    )
    assert (guest_view["phase"], guest_view["waiting_for"]) == ("waiting", "approval")
    assert value(scrape(), "weft_runs_waiting", job="tests.flows.approval") == 1

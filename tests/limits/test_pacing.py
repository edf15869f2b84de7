"""Debounce and throttle (DESIGN.md section 10), on the driven clock: a burst of starts of
a key is one run with the last start's args, begun once the burst has been quiet for
the window; another key, another owner or a run already begun gets a run of its own;
two starts at the same moment merge; a throttled start within the period is refused,
saying when the next may start, at every door; a batch of a paced job is refused."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client

from django_weft.exceptions import PacedBatch, Throttled
from django_weft.jobs.registry import registry
from django_weft.models import Run, RunStatus
from django_weft.operations import start, start_many
from django_weft.testing import Rehearsal
from django_weft.timing import clocks
from tests.threads import together

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_burst_of_starts_is_one_run_with_the_last_args(rehearsal: Rehearsal) -> None:
    digest = registry.get("tests.limits.digest")
    first = start(digest, {"tenant": "a", "events": 1})
    for events in range(2, 201):
        if events % 50 == 0:
            rehearsal.advance(timedelta(seconds=10))  # quieter than the window: still one
        joined = start(digest, {"tenant": "a", "events": events})
        assert joined.pk == first.pk
    run = Run.objects.get()
    assert (run.args, run.status) == ({"tenant": "a", "events": 200}, RunStatus.QUEUED)
    assert run.retry_at == clocks.now() + timedelta(seconds=30)
    rehearsal.advance(timedelta(seconds=29))
    assert Run.objects.get().status == RunStatus.QUEUED, "the window is not over"
    rehearsal.advance(timedelta(seconds=1))
    assert (Run.objects.get().status, Run.objects.get().result) == (RunStatus.DONE, 200)


def test_another_key_owner_or_a_begun_run_gets_a_run_of_its_own(rehearsal: Rehearsal) -> None:
    digest = registry.get("tests.limits.digest")
    someone = get_user_model().objects.create_user("someone")
    a = start(digest, {"tenant": "a"})
    b = start(digest, {"tenant": "b"})
    theirs = start(digest, {"tenant": "a"}, owner=someone)
    assert len({a.pk, b.pk, theirs.pk}) == 3, "no one's args run as another owner"
    rehearsal.advance(timedelta(seconds=30))
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.DONE}
    later = start(digest, {"tenant": "a"})
    assert later.pk != a.pk, "a run that began is not joined"


def test_two_starts_at_the_same_moment_merge() -> None:
    digest = registry.get("tests.limits.digest")

    def one(events: int) -> None:
        try:
            start(digest, {"tenant": "a", "events": events})
        finally:
            connection.close()

    together(lambda: one(1), lambda: one(2))
    assert Run.objects.count() == 1


def test_a_throttled_start_is_refused_saying_when_the_next_may_start(
    rehearsal: Rehearsal,
) -> None:
    ping = registry.get("tests.limits.ping")
    first = start(ping, {"tenant": "a"})
    start(ping, {"tenant": "b"})
    rehearsal.advance(timedelta(seconds=20))
    with pytest.raises(Throttled) as refused:
        start(ping, {"tenant": "a"})
    next_at = first.created_at + timedelta(minutes=1)
    assert refused.value.next_at == next_at
    assert f"the next may start at {next_at.isoformat()}" in str(refused.value)
    assert Run.objects.count() == 2
    rehearsal.advance(timedelta(seconds=40))
    assert start(ping, {"tenant": "a"}).pk != first.pk


def test_the_api_answers_a_throttled_start_with_409_and_its_code() -> None:
    user: Any = get_user_model().objects.create_user("u")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    client = Client()
    client.force_login(user)
    body = {"job": "tests.limits.ping", "args": {"tenant": "a"}}
    assert client.post("/api/weft/runs/", body, content_type="application/json").status_code == 201
    refused = client.post("/api/weft/runs/", body, content_type="application/json")
    assert refused.status_code == 409
    assert refused.json()["code"] == "throttled"
    assert "the next may start at" in refused.json()["detail"]


def test_a_batch_of_a_paced_job_is_refused() -> None:
    with pytest.raises(PacedBatch, match="start its runs one at a time"):
        start_many("tests.limits.digest", [{"tenant": "a"}, {"tenant": "b"}])
    assert not Run.objects.exists()

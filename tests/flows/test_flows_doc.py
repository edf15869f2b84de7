"""docs/flows.md's snippets, run as pasted: the album's group, the release workflow
(waiting for an approval before it deploys), the checkout that never charges twice, the
reminder that sleeps thirteen days, the refund that waits for an approval (and the one
nobody approves), on the driven clock with an inline worker."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from django_weft.jobs.registry import registry
from django_weft.jobs.workflows import workflows
from django_weft.models import Run, RunStatus, Workflow
from django_weft.operations import send_signal, start, start_workflow
from django_weft.testing import Rehearsal
from tests.test_docs import doc_block

pytestmark = pytest.mark.django_db(transaction=True)

NOW = timedelta(0)
JOBS = ("shop.checkout", "shop.trial_reminder", "shop.refund")
ALBUM_JOBS = ("photos.thumbnail", "photos.album_ready")


@pytest.fixture
def page() -> Iterator[dict[str, Any]]:
    """The page's job blocks, executed in one namespace (their jobs registered), and the
    block that sends the signal; the jobs are unregistered after the test."""
    namespace: dict[str, Any] = {}
    for marker in ('@job("shop.checkout"', '@job("shop.trial_reminder")', '@job("shop.refund")'):
        exec(compile(doc_block("flows.md", marker), "docs/flows.md", "exec"), namespace)
    namespace["send"] = doc_block("flows.md", "send_signal(run")
    yield namespace
    for name in JOBS:
        registry.unregister(name)


def fresh(run: Run) -> Run:
    return Run.objects.get(pk=run.pk)


def test_flows_doc_checkout_charges_once(page: dict[str, Any], rehearsal: Rehearsal) -> None:
    run = start(registry.get("shop.checkout"), {"order": "A-1", "amount": 30})
    rehearsal.advance(NOW)
    assert (fresh(run).status, fresh(run).attempt) == (RunStatus.QUEUED, 1)
    rehearsal.advance(timedelta(seconds=30))
    done = fresh(run)
    assert (done.status, done.attempt) == (RunStatus.DONE, 2)
    assert done.result == {
        "charged": {"order": "A-1", "amount": 30, "charge": 1},
        "shipped": True,
    }
    assert page["CHARGES"] == [("A-1", 30)], "one charge"


def test_flows_doc_reminder_sleeps_thirteen_days(
    page: dict[str, Any], rehearsal: Rehearsal
) -> None:
    run = start(registry.get("shop.trial_reminder"), {"user": 7})
    rehearsal.advance(NOW)
    assert (fresh(run).status, fresh(run).worker_id) == (RunStatus.WAITING, None)
    rehearsal.advance(timedelta(days=13) - timedelta(seconds=1))
    assert fresh(run).status == RunStatus.WAITING
    rehearsal.advance(timedelta(seconds=1))
    assert (fresh(run).status, fresh(run).result) == (RunStatus.DONE, "reminded")


def test_flows_doc_refund_waits_for_the_approval_sent_as_the_page_sends_it(
    page: dict[str, Any], rehearsal: Rehearsal
) -> None:
    run = start(registry.get("shop.refund"), {"order": "A-1", "amount": 30})
    rehearsal.advance(NOW)
    assert (fresh(run).status, fresh(run).awaiting) == (
        RunStatus.WAITING,
        "approval",
    )
    exec(compile(page["send"], "docs/flows.md", "exec"), {})
    rehearsal.advance(NOW)
    assert (fresh(run).status, fresh(run).result) == (RunStatus.DONE, "refunded")


def test_flows_doc_refund_nobody_approves_expires(
    page: dict[str, Any], rehearsal: Rehearsal
) -> None:
    run = start(registry.get("shop.refund"), {"order": "A-2", "amount": 5})
    rehearsal.advance(NOW)
    rehearsal.advance(timedelta(days=3))
    assert fresh(run).result == "expired: nobody approved it in three days"


@pytest.fixture
def album_page() -> Iterator[dict[str, Any]]:
    """The page's group block, executed (its jobs registered, then unregistered)."""
    namespace: dict[str, Any] = {}
    exec(compile(doc_block("flows.md", "def make_album("), "docs/flows.md", "exec"), namespace)
    yield namespace
    for name in ALBUM_JOBS:
        registry.unregister(name)


def test_flows_doc_album_calls_back_once_with_every_thumbnail(
    album_page: dict[str, Any], rehearsal: Rehearsal
) -> None:
    group = album_page["make_album"]("summer", [1, 2, 3])
    again = album_page["make_album"]("summer", [1, 2, 3])
    assert again.pk == group.pk, "the key makes it one album"
    rehearsal.advance(NOW)
    rehearsal.advance(NOW)
    (callback,) = Run.objects.filter(job="photos.album_ready")
    assert callback.status == RunStatus.DONE
    assert callback.result == {
        "album": "summer",
        "summary": {"total": 3, "unfinished": 0, "done": 3, "failed": 0, "aborted": 0, "lost": 0},
        "bytes": 3006,
    }


RELEASE_JOBS = ("releases.build", "releases.run_suite", "releases.deploy", "releases.announce")


@pytest.fixture
def release_page() -> Iterator[dict[str, Any]]:
    """The page's workflow blocks, executed (its jobs and workflow registered, then not)."""
    namespace: dict[str, Any] = {}
    exec(compile(doc_block("flows.md", "release = workflow("), "docs/flows.md", "exec"), namespace)
    namespace["start"] = doc_block("flows.md", "started = start_workflow(")
    yield namespace
    for name in RELEASE_JOBS:
        registry.unregister(name)
    workflows.unregister("releases.release")


def test_flows_doc_release_builds_tests_waits_for_approval_deploys_and_announces(
    release_page: dict[str, Any], rehearsal: Rehearsal
) -> None:
    exec(release_page["start"], release_page)
    exec(release_page["start"], release_page)  # the key: one release
    started = release_page["started"]
    assert Workflow.objects.count() == 1
    for _ in range(6):
        rehearsal.advance(NOW)
    steps = {step.name: step.run for step in started.steps.select_related("run")}
    assert {name: run.status for name, run in steps.items()} == {
        "build": "done",
        "unit": "done",
        "e2e": "done",
        "deploy": "waiting",
        "announce": "waiting",
    }
    assert steps["deploy"].awaiting == "approval"
    send_signal(steps["deploy"], "approval", {"by": "ana"})
    for _ in range(4):
        rehearsal.advance(NOW)
    steps = {step.name: step.run for step in started.steps.select_related("run")}
    assert Run.objects.get(pk=steps["deploy"].pk).result == "ana deployed site-v2.4.0.tar.gz"
    assert Run.objects.get(pk=steps["announce"].pk).result == {"deploy": "done"}
    started.refresh_from_db()
    assert started.status == "done"


PUBLISH_JOBS = ("photos.list_album", "photos.resize", "photos.publish_album")


@pytest.fixture
def publish_page() -> Iterator[dict[str, Any]]:
    """The page's group step block, executed (its jobs and workflow registered, then not)."""
    namespace: dict[str, Any] = {}
    exec(compile(doc_block("flows.md", "publish = workflow("), "docs/flows.md", "exec"), namespace)
    yield namespace
    for name in PUBLISH_JOBS:
        registry.unregister(name)
    workflows.unregister("photos.publish")


def test_flows_doc_publish_resizes_each_listed_photo_then_publishes(
    publish_page: dict[str, Any], rehearsal: Rehearsal
) -> None:
    started = start_workflow("photos.publish", {"album": "summer"})
    for _ in range(6):
        rehearsal.advance(NOW)
    started.refresh_from_db()
    assert started.status == "done"
    resize = started.steps.get(name="resize")
    assert Run.objects.filter(job="photos.resize", group=resize.group_id).count() == 3
    published = started.steps.get(name="publish").run
    assert published is not None
    assert published.result == {"photos": 3, "bytes": 3036}

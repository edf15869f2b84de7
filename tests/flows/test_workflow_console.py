"""Workflows in the console and the API: the page shows the graph in layers with each
step's phase and run, *retry step* and *abort* go through the service layer (refused for
a stranger, on record for the owner), and the API's views keep args and results for the
owner."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from django_weft.models import AuditAction, AuditRecord, Run, RunStatus, Workflow
from django_weft.operations import start_workflow
from django_weft.testing import Rehearsal

pytestmark = pytest.mark.django_db(transaction=True)


def user(name: str, *codenames: str) -> Any:
    made: Any = get_user_model().objects.create_user(name, is_staff=True)
    made.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return made


def signed_in(who: Any) -> Client:
    client = Client()
    client.force_login(who)
    return client


def failed_release(rehearsal: Rehearsal, owner: Any) -> Workflow:
    workflow = start_workflow("tests.release", {"ref": "c1", "flaky": ["unit"]}, owner=owner)
    for _ in range(8):
        rehearsal.advance(timedelta(0))
    workflow.refresh_from_db()
    return workflow


def test_workflow_page_shows_the_graph_and_retries_a_step(rehearsal: Rehearsal) -> None:
    owner = user("owner", "add_run", "view_run")
    workflow = failed_release(rehearsal, owner)
    page_url = reverse("admin:django_weft_workflow_change", args=[workflow.pk])
    client = signed_in(owner)
    page = client.get(page_url).content.decode()
    # Three layers: build; unit and e2e side by side; deploy; announce.
    assert page.count("class='weft-graph-layer'") == 4
    assert "data-step='unit'" in page
    assert "weft-phase weft-phase-failed" in page
    assert "Retry step unit" in page
    assert "Retry step deploy" in page, "offered; the service layer says why not"
    listed = client.get(reverse("admin:django_weft_workflow_changelist")).content.decode()
    assert "5 of 5 steps ended" in listed

    refused = client.post(
        reverse("admin:django_weft_workflow_retry_step", args=[workflow.pk, "deploy"]),
        follow=True,
    )
    assert "retry step unit first" in refused.content.decode()
    retried = client.post(
        reverse("admin:django_weft_workflow_retry_step", args=[workflow.pk, "unit"]),
        follow=True,
    )
    assert "Step unit retried as run" in retried.content.decode()
    record = AuditRecord.objects.get(action=AuditAction.WORKFLOW_RETRY_STEP)
    assert (record.details["step"], record.via) == ("unit", "admin")
    for _ in range(6):
        rehearsal.advance(timedelta(0))
    workflow.refresh_from_db()
    assert workflow.status == "done"


def test_a_stranger_may_look_but_not_retry_or_abort(rehearsal: Rehearsal) -> None:
    workflow = failed_release(rehearsal, user("owner", "add_run"))
    stranger = signed_in(user("stranger", "view_run", "add_run"))
    page = stranger.get(reverse("admin:django_weft_workflow_change", args=[workflow.pk]))
    assert page.status_code == 200
    assert "Retry step" not in page.content.decode()
    refused = stranger.post(
        reverse("admin:django_weft_workflow_retry_step", args=[workflow.pk, "unit"]), follow=True
    )
    assert "needs django_weft.change_run, or to be its owner" in refused.content.decode()
    stranger.post(
        reverse("admin:django_weft_workflow_changelist"),
        {"action": "abort_action", "_selected_action": [workflow.pk]},
    )
    assert (
        not AuditRecord.objects.filter(object_id=str(workflow.pk))
        .exclude(action=AuditAction.WORKFLOW_START)
        .exists()
    )


def test_the_api_starts_a_workflow_once_and_shows_results_to_its_owner_only(
    rehearsal: Rehearsal,
) -> None:
    owner = signed_in(user("owner", "add_run"))
    body = {"workflow": "tests.release", "args": {"ref": "a1"}}
    started = owner.post(
        "/api/weft/workflows/", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="a1"
    )
    assert started.status_code == 201, started.content
    again = owner.post(
        "/api/weft/workflows/", body, content_type="application/json", HTTP_IDEMPOTENCY_KEY="a1"
    )
    assert (again.status_code, again.json()["id"]) == (200, started.json()["id"])
    assert Workflow.objects.count() == 1
    for _ in range(8):
        rehearsal.advance(timedelta(0))
    url = f"/api/weft/workflows/{started.json()['id']}/"
    mine = owner.get(url).json()
    assert mine["status"] == "done"
    assert mine["args"] == {"ref": "a1"}
    names = [step["name"] for step in mine["steps"]]
    assert names == ["build", "unit", "e2e", "deploy", "announce"]
    assert mine["steps"][0]["result"] == {"artifact": "build-a1"}
    guest = signed_in(user("guest")).get(url).json()
    assert [step["phase"] for step in guest["steps"]] == ["done"] * 5
    assert "args" not in guest
    assert not any("result" in step or "error_message" in step for step in guest["steps"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"workflow": "tests.nope"}, "workflow"),
        ({"workflow": "tests.release", "args": {}}, "steps.build"),
        ({"workflow": "tests.release", "args": []}, "args"),
        ({"workflow": "tests.release", "stepz": 1}, "stepz"),
    ],
)
def test_a_bad_start_names_what_is_wrong_and_writes_nothing(body: Any, field: str) -> None:
    owner = signed_in(user("owner", "add_run"))
    refused = owner.post("/api/weft/workflows/", body, content_type="application/json")
    assert refused.status_code == 400
    assert field in refused.json()
    assert not Workflow.objects.exists()
    assert not Run.objects.exists()


def test_the_api_retries_a_step_and_refuses_one_that_cannot_be(rehearsal: Rehearsal) -> None:
    owner = user("owner", "add_run")
    workflow = failed_release(rehearsal, owner)
    client = signed_in(owner)
    refused = client.post(f"/api/weft/workflows/{workflow.pk}/steps/build/retry/")
    assert (refused.status_code, refused.json()["code"]) == (409, "step_not_retriable")
    retried = client.post(f"/api/weft/workflows/{workflow.pk}/steps/unit/retry/")
    assert retried.status_code == 201
    unit = next(step for step in retried.json()["steps"] if step["name"] == "unit")
    assert unit["phase"] == "queued"
    assert Run.objects.get(pk=unit["run"]).status == RunStatus.QUEUED
    aborted = client.post(f"/api/weft/workflows/{workflow.pk}/abort/")
    assert (aborted.status_code, aborted.json()["status"]) == (202, "aborted")


def test_the_console_starts_a_workflow_as_the_signed_in_user() -> None:
    starter = user("starter", "add_run", "view_run")
    client = signed_in(starter)
    listed = client.get(reverse("admin:django_weft_workflow_changelist")).content.decode()
    assert "Start a workflow" in listed
    form_url = reverse("admin:django_weft_workflow_start")
    refused = client.post(form_url, {"workflow": "tests.release", "args": "{}"})
    assert refused.status_code == 200
    assert "its args could not be made" in refused.content.decode(), "named on the form"
    assert not Workflow.objects.exists()
    started = client.post(form_url, {"workflow": "tests.release", "args": '{"ref": "f1"}'})
    workflow = Workflow.objects.get()
    assert started.url == reverse("admin:django_weft_workflow_change", args=[workflow.pk])
    assert (workflow.owner, workflow.args) == (starter, {"ref": "f1"})
    record = AuditRecord.objects.get(action=AuditAction.WORKFLOW_START)
    assert record.via == "admin"

    watcher = signed_in(user("watcher", "view_run"))
    assert (
        "Start a workflow"
        not in watcher.get(reverse("admin:django_weft_workflow_changelist")).content.decode()
    )
    assert watcher.get(form_url).status_code == 403


def test_a_group_step_shows_its_members_progress_everywhere(rehearsal: Rehearsal) -> None:
    """The page, the run page of the step's waiting run, and the API (guest view too)
    say how far a group step's members got and link its group."""
    owner = user("owner", "add_run", "view_run")
    workflow = start_workflow("tests.fanned", {"numbers": [1, 2]}, owner=owner)
    step = workflow.steps.get(name="squares")
    client = signed_in(owner)
    page = client.get(reverse("admin:django_weft_workflow_change", args=[workflow.pk]))
    group_url = reverse("admin:django_weft_group_change", args=[step.group_id])
    assert f"<a class='weft-step-group' href='{group_url}'>0 of 2 members ended</a>" in (
        page.content.decode()
    )
    waiting = client.get(reverse("admin:django_weft_run_change", args=[step.run_id]))
    assert f'Waits for the members of <a href="{group_url}">its group</a>' in (
        waiting.content.decode()
    )
    total = workflow.steps.get(name="total")
    later = client.get(reverse("admin:django_weft_run_change", args=[total.run_id]))
    assert "Waits for the steps it depends on" in later.content.decode()
    for _ in range(8):
        rehearsal.advance(timedelta(0))
    url = f"/api/weft/workflows/{workflow.pk}/"
    for viewer in (client, signed_in(user("guest"))):
        shown = viewer.get(url).json()["steps"][0]["group"]
        assert shown == {"id": str(step.group_id), "total": 2, "ended": 2, "failed": 0}
    assert client.get(url).json()["steps"][0]["result"] == {"results": [1, 4]}


def test_a_group_steps_failed_members_show_on_the_page_and_its_group_links_back(
    rehearsal: Rehearsal,
) -> None:
    owner = user("owner", "add_run", "view_run")
    workflow = start_workflow("tests.album", {"count": 3, "flaky": [1]}, owner=owner)
    for _ in range(8):
        rehearsal.advance(timedelta(0))
    client = signed_in(owner)
    page = client.get(reverse("admin:django_weft_workflow_change", args=[workflow.pk]))
    assert "3 of 3 members ended, 1 failed" in page.content.decode()
    assert "Retry step squares" in page.content.decode()
    step = workflow.steps.get(name="squares")
    group_page = client.get(reverse("admin:django_weft_group_change", args=[step.group_id]))
    workflow_url = reverse("admin:django_weft_workflow_change", args=[workflow.pk])
    assert (
        f"<a href='{workflow_url}'>step squares of workflow tests.album</a>"
        in group_page.content.decode()
    )

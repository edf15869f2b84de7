"""Groups in the console: the list and page show each group's progress and its callback
run, the members' link opens the run list filtered by the group (for a guest too), and
abort and seal are actions decided by the service layer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from django_weft.engine.flows.groups import Callback
from django_weft.engine.runs.starting import StartRequest
from django_weft.jobs.registry import registry
from django_weft.models import AuditAction, AuditRecord, Run, RunStatus
from django_weft.operations import start_group
from django_weft.testing import Rehearsal

pytestmark = pytest.mark.django_db(transaction=True)


def staff(name: str, *codenames: str) -> Client:
    user: Any = get_user_model().objects.create_user(name, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def squares(owner: Any = None, *numbers: int, sealed: bool = True) -> Any:
    job = registry.get("tests.flows.member")
    return start_group(
        [StartRequest(job, {"number": n}) for n in numbers],
        callback=Callback(registry.get("tests.flows.gather"), {"label": "console"}),
        name="squares",
        owner=owner,
        sealed=sealed,
    )


def test_group_page_shows_progress_members_and_callback(rehearsal: Rehearsal) -> None:
    group = squares(None, 1, 2, 3)
    operator = staff("operator", "view_run")
    listed = operator.get(reverse("admin:django_weft_group_changelist")).content.decode()
    assert "0 of 3" in listed
    rehearsal.advance(timedelta(0))
    rehearsal.advance(timedelta(0))
    page = operator.get(reverse("admin:django_weft_group_change", args=[group.pk])).content.decode()
    assert "3 of 3: 3 done" in page
    group.refresh_from_db()
    assert str(group.callback_run_id) in page
    members_url = f"{reverse('admin:django_weft_run_changelist')}?group__id__exact={group.pk}"
    assert members_url.replace("&", "&amp;") in page or members_url in page

    guest = staff("guest", "change_run")  # sees other people's runs as a guest
    members = guest.get(members_url)
    assert members.status_code == 200, "a guest may filter runs by their group"
    assert members.content.decode().count("tests.flows.member") >= 3


def test_group_actions_go_through_the_service_layer(rehearsal: Rehearsal) -> None:
    owner: Any = get_user_model().objects.create_user("owner", is_staff=True)
    owner.user_permissions.add(*Permission.objects.filter(codename__in=["add_run", "view_run"]))
    mine = squares(owner, 1, 2, sealed=False)
    theirs = staff("someone", "view_run")
    changelist = reverse("admin:django_weft_group_changelist")
    refused = theirs.post(
        changelist, {"action": "seal_action", "_selected_action": [mine.pk]}, follow=True
    )
    assert "needs django_weft.change_run, or to be its owner" in refused.content.decode()
    mine.refresh_from_db()
    assert not mine.is_sealed

    client = Client()
    client.force_login(owner)
    client.post(changelist, {"action": "abort_action", "_selected_action": [mine.pk]})
    mine.refresh_from_db()
    assert (mine.is_sealed, mine.aborted) == (True, 2)
    assert set(Run.objects.filter(group=mine).values_list("status", flat=True)) == {
        RunStatus.ABORTED
    }
    assert AuditRecord.objects.filter(action=AuditAction.GROUP_ABORT, via="admin").count() == 1

"""The console's word on parked schedules: why a row fires nothing, in the list and on its
page, and what takes it over again (*resume* or *enable* of a row whose owner's user was
deleted, an edit of what it runs); deleting the owner through the admin parks the row."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from django_weft.models import Schedule

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)
LIST = "admin:django_weft_schedule_changelist"


def make_user(name: str, *codenames: str, **fields: Any) -> Any:
    user = get_user_model().objects.create_user(name, password="pw", **fields)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root() -> Client:
    return client_of(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))


def remind(owner: Any, name: str = "remind") -> Schedule:
    return Schedule.objects.create(
        name=name, job="content.remind", args={"text": "renew"}, every=HOUR, owner=owner
    )


def change_url(schedule: Schedule) -> str:
    return reverse("admin:django_weft_schedule_change", args=[schedule.pk])


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def list_rows(client: Client) -> dict[str, str]:
    """Each row of the schedule list's table by the schedule's name."""
    page = client.get(reverse(LIST)).content.decode()
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = body.split("<tr")[1:]
    return {
        name: row for row in rows for name in ("remind", "other", "orphan") if f">{name}<" in row
    }


def test_schedule_list_says_why_a_row_is_parked(root: Client) -> None:
    """*Next due* says "parked" and the row's reason (all of it on hover) for a row that
    fires nothing, and "owner was removed" at once for a row whose owner was deleted;
    a paused row is paused."""
    alice = make_user("alice", "add_run")
    parked = remind(alice)
    Schedule.objects.filter(pk=parked.pk).update(problem="owner alice is inactive")
    remind(None, "other")
    remind(make_user("bob", "add_run"), "orphan")
    get_user_model().objects.filter(username="bob").delete()

    rows = list_rows(root)
    reason = "owner alice is inactive"
    assert (
        f"<span class='weft-sch-error' title='{reason}'>parked: {reason}</span>" in (rows["remind"])
    )
    assert "parked: owner was removed" in rows["orphan"]
    assert "parked" not in rows["other"]

    Schedule.objects.filter(pk=parked.pk).update(enabled=False)
    assert "parked" not in list_rows(root)["remind"]
    assert "paused" in list_rows(root)["remind"]


def test_schedule_page_says_why_and_what_makes_it_fire_again(root: Client) -> None:
    """While its owner may not start runs, the page says so and what fixes it."""
    alice = make_user("alice", "add_run", is_active=False)
    parked = remind(alice)
    Schedule.objects.filter(pk=parked.pk).update(problem="owner alice is inactive")
    page = root.get(change_url(parked)).content.decode()
    assert "<strong>owner alice is inactive</strong>." in page
    assert (
        "it fires again at its next slot once its owner is active and holds "
        "django_weft.add_run" in page
    )
    assert 'name="resume"' not in page  # resuming would not make it fire as her


def test_schedule_page_of_removed_owner_offers_resume_which_takes_it_over(
    root: Client,
) -> None:
    """*Resume* shows beside *pause* while the row is parked for its deleted owner; it
    takes the row over as the deployment's own, armed from now."""
    orphan = remind(make_user("bob", "add_run"), "orphan")
    get_user_model().objects.filter(username="bob").delete()
    page = root.get(change_url(orphan)).content.decode()
    assert "<strong>owner was removed</strong>. Nothing fires until it is taken over" in page
    assert 'name="pause"' in page
    assert 'name="resume"' in page

    Schedule.objects.filter(pk=orphan.pk).update(armed=True, problem="owner was removed")
    response = root.post(
        reverse("admin:django_weft_schedule_resume", args=[orphan.pk]), follow=True
    )
    taken = Schedule.objects.get(pk=orphan.pk)
    assert (taken.owner_removed, taken.armed, taken.owner_id) == (False, False, None)
    assert messages_of(response) == [
        "Resumed as the deployment's own: armed from now; its runs have no owner."
    ]
    page = root.get(change_url(orphan)).content.decode()
    assert 'name="resume"' not in page


def test_enable_action_takes_over_rows_of_removed_owners(root: Client) -> None:
    orphan = remind(make_user("bob", "add_run"), "orphan")
    get_user_model().objects.filter(username="bob").delete()
    root.post(reverse(LIST), {"action": "enable_action", "_selected_action": [str(orphan.pk)]})
    assert Schedule.objects.get(pk=orphan.pk).owner_removed is False


def test_edit_of_what_it_runs_makes_the_editor_the_owner(root: Client) -> None:
    """Saving the page with other args takes the row over as the editor's."""
    orphan = remind(make_user("bob", "add_run"), "orphan")
    get_user_model().objects.filter(username="bob").delete()
    form = {
        "name": "orphan",
        "job": "content.remind",
        "enabled": "on",
        "cron": "",
        "timezone": "",
        "every": "01:00:00",
        "at_0": "",
        "at_1": "",
        "catch_up": "skip",
        "overlap": "skip",
        "on_gap": "shift",
        "on_fold": "first",
        "catch_up_window": "",
        "grace": "",
        "args.__inputs": "1",
        "args.text": "renew the domain",
    }
    assert root.post(change_url(orphan), form).status_code == 302
    taken = Schedule.objects.get(pk=orphan.pk)
    assert (taken.owner.get_username(), taken.owner_removed) == ("root", False)


def test_deleting_the_owner_in_the_admin_keeps_the_schedule_parked(root: Client) -> None:
    """The user admin's delete leaves the schedule, without owner, marked removed."""
    bob = make_user("bob", "add_run")
    schedule = remind(bob)
    url = reverse("admin:auth_user_delete", args=[bob.pk])
    assert root.get(url).status_code == 200
    assert root.post(url, {"post": "yes"}).status_code == 302
    kept = Schedule.objects.get(pk=schedule.pk)
    assert (kept.owner_id, kept.owner_removed) == (None, True)

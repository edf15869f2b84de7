"""The console's word on parked schedules: why a row fires nothing, in the list and on its
page, and what takes it over again (*resume* or *enable* of a row whose owner's user was
deleted, an edit of what it runs), which makes whoever does it the owner, if they may
start its runs; deleting the owner through the admin parks the row."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from django_weft.models import AuditAction, AuditRecord, Schedule
from tests.console.test_console_schedules import schedule_form

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
    """*Resume* shows beside *pause* while the row is parked for its deleted owner, and
    the page says that whoever resumes it becomes its owner; it takes the row over as the
    presser's (never as the deployment's own, with no owner), armed from now, on record."""
    orphan = remind(make_user("bob", "add_run"), "orphan")
    get_user_model().objects.filter(username="bob").delete()
    page = root.get(change_url(orphan)).content.decode()
    assert (
        "<strong>owner was removed</strong>. Nothing fires until someone takes it over: "
        "whoever resumes (or enables) it, or changes its job or args, becomes its owner, "
        "and its runs start as them; that needs django_weft.add_run, and the use of any "
        "stored module it calls." in page
    )
    assert 'name="pause"' in page
    assert 'name="resume"' in page

    Schedule.objects.filter(pk=orphan.pk).update(armed=True, problem="owner was removed")
    response = root.post(
        reverse("admin:django_weft_schedule_resume", args=[orphan.pk]), follow=True
    )
    taken = Schedule.objects.get(pk=orphan.pk)
    assert (taken.owner_removed, taken.armed) == (False, False)
    assert taken.owner.get_username() == "root"
    assert messages_of(response) == [
        "Resumed and taken over: you are its owner now, and its runs start as you; armed from now."
    ]
    record = AuditRecord.objects.get(action=AuditAction.SCHEDULE_TAKE_OVER)
    assert (record.actor_name, record.object_id, record.via) == ("root", str(orphan.pk), "admin")
    page = root.get(change_url(orphan)).content.decode()
    assert 'name="resume"' not in page


def test_enable_action_takes_over_rows_of_removed_owners_as_the_enabler(root: Client) -> None:
    """The list's *enable* makes the enabler the owner of a row whose owner was removed,
    and says so; the take-over is on record."""
    orphan = remind(make_user("bob", "add_run"), "orphan")
    get_user_model().objects.filter(username="bob").delete()
    response = root.post(
        reverse(LIST),
        {"action": "enable_action", "_selected_action": [str(orphan.pk)]},
        follow=True,
    )
    taken = Schedule.objects.get(pk=orphan.pk)
    assert (taken.owner_removed, taken.owner.get_username()) == (False, "root")
    assert messages_of(response) == [
        "Enabled 1 schedule; it fires from now on. Taken over, as their owner was removed: "
        "you are the owner of orphan, and their runs start as you."
    ]
    assert AuditRecord.objects.filter(action=AuditAction.SCHEDULE_TAKE_OVER).count() == 1


def test_enable_of_a_removed_owners_row_without_add_run_is_refused_naming_it() -> None:
    """An operator who may change schedules but not start runs may not take one over:
    the action's refusal names what is needed, and nothing is written."""
    orphan = remind(make_user("bob", "add_run"), "orphan")
    get_user_model().objects.filter(username="bob").delete()
    operator = make_user("op", "view_schedule", "change_schedule", is_staff=True)
    response = client_of(operator).post(
        reverse(LIST),
        {"action": "enable_action", "_selected_action": [str(orphan.pk)]},
        follow=True,
    )
    assert messages_of(response) == [
        "enable: you may not take over schedule orphan, whose owner was removed: whoever "
        "enables it becomes its owner (needs django_weft.add_run)"
    ]
    kept = Schedule.objects.get(pk=orphan.pk)
    assert (kept.owner_id, kept.owner_removed) == (None, True)
    assert not AuditRecord.objects.exists()


def test_enabling_a_removed_owners_row_in_its_form_takes_it_over() -> None:
    """The change form's *enabled* ticked on a switched-off row whose owner was removed:
    the saver becomes its owner, or, without add_run, the form says why not."""
    orphan = remind(make_user("bob", "add_run"), "orphan")
    get_user_model().objects.filter(username="bob").delete()
    Schedule.objects.filter(pk=orphan.pk).update(enabled=False)
    form = {**FORM, "args.text": "renew"}
    operator = make_user("op", "view_schedule", "change_schedule", is_staff=True)
    refused = client_of(operator).post(change_url(orphan), form)
    assert refused.status_code == 200
    assert "whoever enables it becomes its owner (needs django_weft.add_run)" in (
        refused.content.decode()
    )
    assert Schedule.objects.get(pk=orphan.pk).owner_removed is True

    runner = make_user("runner", "view_schedule", "change_schedule", "add_run", is_staff=True)
    assert client_of(runner).post(change_url(orphan), form).status_code == 302
    taken = Schedule.objects.get(pk=orphan.pk)
    assert (taken.enabled, taken.owner_removed, taken.owner_id) == (True, False, runner.pk)
    assert AuditRecord.objects.filter(action=AuditAction.SCHEDULE_TAKE_OVER).count() == 1


#: The change form of the row ``remind(..., "orphan")`` makes, switched on.
FORM = schedule_form(name="orphan", job="content.remind", **{"args.__inputs": "1"})


def test_edit_of_what_it_runs_makes_the_editor_the_owner(root: Client) -> None:
    """Saving the page with other args takes the row over as the editor's."""
    orphan = remind(make_user("bob", "add_run"), "orphan")
    get_user_model().objects.filter(username="bob").delete()
    form = {**FORM, "args.text": "renew the domain"}
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

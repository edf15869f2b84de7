"""The admin pages: schedule forms and actions, read-only runs with an abort action."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from django.urls import reverse

from django_weft.models import Run, RunStatus, Schedule
from django_weft.operations import start
from example_project.shell.jobs import shell

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
    return client


def form_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "name": "digest",
        "job": "content.digest",
        "args": "{}",
        "enabled": "on",
        "cron": "0 7 * * *",
        "timezone": "America/Toronto",
        "every": "",
        "at_0": "",
        "at_1": "",
        "catch_up": "skip",
        "overlap": "skip",
        "on_gap": "shift",
        "on_fold": "first",
        "catch_up_window": "",
        "grace": "",
    }
    return data | overrides


def test_admin_schedule_list_shows_plan_zone_due_and_last_status(admin_client: Client) -> None:
    """The list shows each schedule's plan in words (with its zone), last status and error."""
    Schedule.objects.create(
        name="digest", job="content.digest", cron="0 7 * * *", timezone="America/Toronto"
    )
    Schedule.objects.filter(name="digest").update(
        last_status="failed", last_error_message="smtp down"
    )
    page = admin_client.get(reverse("admin:django_weft_schedule_changelist")).content.decode()
    for text in (
        "digest",
        "07:00 every day, America/Toronto",
        "failed",
        "smtp down",
    ):
        assert text in page


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"cron": "61 * * * *"}, "cron", "61 * * * *"),
        ({"cron": "0 0 30 2 *"}, "cron", "never occurs"),
        ({"timezone": "Mars/Olympus"}, "timezone", "Mars/Olympus"),
        ({"timezone": ""}, "timezone", "needs an IANA time zone"),
        ({"job": "no.such.job"}, "job", "no.such.job"),
        ({"job": "content.remind", "args": '{"text": ""}'}, "args", "text"),
    ],
)
def test_admin_schedule_form_refuses_bad_input(
    admin_client: Client, overrides: dict[str, str], field: str, words: str
) -> None:
    """The add form shows a message naming the bad field, and writes nothing."""
    response = admin_client.post(reverse("admin:django_weft_schedule_add"), form_data(**overrides))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors, errors
    assert words in " ".join(errors[field])
    assert not Schedule.objects.exists()


@pytest.mark.parametrize("zone", ["", "Mars/Olympus"])
def test_admin_schedule_form_shows_every_field_error_at_once(
    admin_client: Client, zone: str
) -> None:
    """A bad cron with no zone (or an unknown one) gets both messages in one answer: the
    zone's does not hide the expression's."""
    response = admin_client.post(
        reverse("admin:django_weft_schedule_add"),
        form_data(cron="61 * * * *", timezone=zone, job="no.such.job"),
    )
    errors = response.context["adminform"].form.errors
    assert 'minute "61" is out of range 0-59' in " ".join(errors["cron"]), errors
    assert errors["timezone"], errors
    assert "no.such.job" in " ".join(errors["job"]), errors
    assert not Schedule.objects.exists()


@override_settings(WEFT_CLOCK="tests.clocks.March7")
def test_admin_schedule_change_page_lists_the_next_fires(admin_client: Client) -> None:
    """The change page lists the coming fires in UTC and in the zone, across the DST change."""
    schedule = Schedule.objects.create(
        name="digest", job="content.digest", cron="0 7 * * *", timezone="America/Toronto"
    )
    page = admin_client.get(
        reverse("admin:django_weft_schedule_change", args=[schedule.pk])
    ).content.decode()
    assert "2026-03-07 12:00 UTC &middot; 2026-03-07 07:00 EST" in page
    assert "2026-03-08 11:00 UTC &middot; 2026-03-08 07:00 EDT" in page
    assert page.count("<li>2026-03-") == 10


def test_admin_schedule_edit_rearms_from_now(admin_client: Client) -> None:
    """Saving a new cron in the admin re-arms the row: its next due is computed afresh."""
    schedule = Schedule.objects.create(
        name="digest", job="content.digest", cron="0 7 * * *", timezone="UTC"
    )
    Schedule.objects.filter(pk=schedule.pk).update(
        armed=True, next_due=datetime(2030, 1, 1, tzinfo=UTC)
    )
    response = admin_client.post(
        reverse("admin:django_weft_schedule_change", args=[schedule.pk]),
        form_data(cron="0 8 * * *", timezone="UTC"),
    )
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert (schedule.cron, schedule.armed, schedule.next_due) == ("0 8 * * *", False, None)


def test_admin_schedule_actions(admin_client: Client) -> None:
    """Run now starts a run of the row; disable and enable switch it, enabling re-arms it."""
    schedule = Schedule.objects.create(
        name="digest", job="content.digest", every=timedelta(hours=1)
    )
    changelist = reverse("admin:django_weft_schedule_changelist")
    admin_client.post(changelist, {"action": "run_now_action", "_selected_action": [schedule.pk]})
    run = Run.objects.get()
    assert (run.schedule_id, run.job, run.status) == (
        schedule.pk,
        "content.digest",
        RunStatus.QUEUED,
    )
    schedule.refresh_from_db()
    assert (schedule.last_status, schedule.last_run_id) == ("running", run.pk)

    admin_client.post(changelist, {"action": "disable_action", "_selected_action": [schedule.pk]})
    assert not Schedule.objects.get(pk=schedule.pk).enabled
    Schedule.objects.filter(pk=schedule.pk).update(
        armed=True, next_due=datetime(2030, 1, 1, tzinfo=UTC)
    )
    admin_client.post(changelist, {"action": "enable_action", "_selected_action": [schedule.pk]})
    schedule.refresh_from_db()
    assert (schedule.enabled, schedule.armed, schedule.next_due) == (True, False, None)


def test_admin_runs_are_read_only_and_abortable(admin_client: Client) -> None:
    """Run history cannot be added or deleted; the abort action aborts selected runs."""
    run = start(shell, {"command": "ls", "lines": 3})
    assert admin_client.get(reverse("admin:django_weft_run_add")).status_code == 403
    page = admin_client.get(reverse("admin:django_weft_run_change", args=[run.pk])).content.decode()
    assert "ls" in page
    assert "weft-terminal" in page
    assert "django_weft/console.js" in page, "the script that follows the run live"
    assert 'name="job"' not in page, "fields are read-only"
    admin_client.post(
        reverse("admin:django_weft_run_changelist"),
        {"action": "abort_action", "_selected_action": [run.pk]},
    )
    assert Run.objects.get(pk=run.pk).status == RunStatus.ABORTED
    filtered = admin_client.get(
        reverse("admin:django_weft_run_changelist"), {"status__exact": "aborted"}
    )
    assert str(run.pk) in filtered.content.decode()

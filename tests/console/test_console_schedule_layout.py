"""A schedule page's layout: the plan, the next due and the next fires first, the
fields of the plan's kind after them, the other kinds folded away, the last run folded
while the schedule has never fired (django_weft/console/schedule_layout.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from django_weft.models import Schedule
from tests.console.test_admin import form_data

pytestmark = pytest.mark.django_db


def layout(response: Any) -> dict[str, tuple[list[str], bool]]:
    """Each fieldset of the page by its heading: its fields in order, and whether it is
    folded."""
    found = {}
    for fieldset in response.context["adminform"]:
        fields = [
            name
            for line in fieldset.fields
            for name in (line if isinstance(line, tuple) else (line,))
        ]
        found[str(fieldset.name or "")] = (fields, fieldset.is_collapsible)
    return found


def test_a_cron_schedule_shows_its_plan_first_and_folds_the_other_kinds(
    admin_client: Client,
) -> None:
    digest = Schedule.objects.create(
        name="digest", job="content.digest", cron="0 7 * * *", timezone="America/Toronto"
    )
    page = layout(admin_client.get(reverse("admin:django_weft_schedule_change", args=[digest.pk])))
    assert list(page) == [
        "",
        "When",
        "Another kind of plan",
        "Enabled, state and owner",
        "Args",
        "Policies",
        "Last run",
    ]
    assert page[""] == (["name", "job"], False)
    assert page["When"] == (
        ["plan", "next_due_at", "next_fires", "cron", "timezone", "on_gap", "on_fold"],
        False,
    )
    assert page["Another kind of plan"] == (["every", "at"], True)
    assert page["Last run"][1], "never fired: folded"


def test_an_interval_schedule_folds_the_cron_and_the_moment(admin_client: Client) -> None:
    sitemap = Schedule.objects.create(name="sitemap", job="tests.noop", every=timedelta(minutes=20))
    sitemap.last_due = timezone.now()
    sitemap.save(update_fields=["last_due"])
    page = layout(admin_client.get(reverse("admin:django_weft_schedule_change", args=[sitemap.pk])))
    assert page["When"] == (["plan", "next_due_at", "next_fires", "every"], False)
    assert page["Another kind of plan"] == (
        ["cron", "timezone", "on_gap", "on_fold", "at"],
        True,
    )
    assert not page["Last run"][1], "it fired: its last run shows"


def test_the_add_page_shows_every_kind_open(admin_client: Client) -> None:
    page = layout(admin_client.get(reverse("admin:django_weft_schedule_add")))
    assert "Another kind of plan" not in page
    assert page["When"][0] == [
        "plan",
        "next_due_at",
        "next_fires",
        "cron",
        "timezone",
        "on_gap",
        "on_fold",
        "every",
        "at",
    ]


def test_a_folded_field_with_an_error_is_shown_open(admin_client: Client) -> None:
    """An interval typed into a cron schedule is refused naming both fields, and the
    folded fieldset that holds the interval is open to show its error."""
    digest = Schedule.objects.create(
        name="digest", job="content.digest", cron="0 7 * * *", timezone="America/Toronto"
    )
    url = reverse("admin:django_weft_schedule_change", args=[digest.pk])
    form = form_data(every="00:20:00")
    response = admin_client.post(url, form)
    assert response.status_code == 200
    assert "Give exactly one of cron, every and at" in response.content.decode()
    assert layout(response)["Another kind of plan"] == (["every", "at"], False)
    assert Schedule.objects.get(pk=digest.pk).every is None

"""The run list's bulk actions (retry, abort, delete) and the run page's retry links.

Users: ``owner`` (staff, add_run and change_run: the run list needs view or change)
who owns some runs; ``other`` (staff, the same) who owns others; ``viewer`` (staff,
view_run); ``root`` (a superuser). The selection is the admin's: ticked rows, or every run
the list's filter matches (``select_across``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from django_weft.models import Run, RunStatus, Schedule
from django_weft.operations import start
from tests.console.test_console_runs import client_of, messages_of, staff
from tests.jobs import noop, sleep
from tests.test_bulk_operations import finished as failed
from tests.test_bulk_operations import savepoints

pytestmark = pytest.mark.django_db

RUNS = "/admin/django_weft/run/"


@pytest.fixture
def owner() -> Any:
    return staff("owner", "add_run", "change_run")


@pytest.fixture
def other() -> Any:
    return staff("other", "add_run", "change_run")


@pytest.fixture
def root() -> Any:
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw")


def act(client: Client, action: str, runs: list[Run], url: str = RUNS, **more: Any) -> Any:
    data = {"action": action, "_selected_action": [str(run.pk) for run in runs], **more}
    return client.post(url, data, follow=True)


def test_retry_selected_retries_own_runs_and_counts_the_others(owner: Any, other: Any) -> None:
    """At once, no confirmation: the owner's run is retried, another's refused."""
    mine, theirs = failed(owner), failed(other)
    response = act(client_of(owner), "retry_action", [mine, theirs], index="0")
    [said] = messages_of(response)
    assert said.startswith("Retried 1 run; 1 refused: 1 forbidden")
    assert "django_weft.view_run" in said
    assert Run.objects.get(retry_of=mine).owner == owner
    assert not Run.objects.filter(retry_of=theirs).exists()


def test_abort_selected_goes_through_the_same_checks(other: Any) -> None:
    """view_run aborts its own run; another user's needs change_run."""
    viewer = staff("viewer", "view_run")
    queued = start(sleep, {"seconds": 60}, owner=viewer)
    theirs = start(sleep, {"seconds": 60}, owner=other)
    response = act(client_of(viewer), "abort_action", [queued, theirs], index="0")
    assert messages_of(response)[0].startswith("Abort requested for 1 run; 1 refused")
    assert Run.objects.get(pk=queued.pk).status == RunStatus.ABORTED
    assert Run.objects.get(pk=theirs.pk).status == RunStatus.QUEUED


def test_delete_selected_asks_first_then_deletes(owner: Any, root: Any) -> None:
    """The confirmation names the count and deletes nothing; "yes" deletes what the
    user may (a superuser: anyone's finished run; a run still going is refused)."""
    runs = [failed(owner), failed(owner), start(sleep, {"seconds": 60})]
    client = client_of(root)
    page = act(client, "delete_action", runs, index="0")
    assert page.templates[0].name == "admin/django_weft/run/bulk_confirmation.html"
    assert "Delete the 3 selected runs?" in page.content.decode()
    assert Run.objects.count() == 3
    response = act(client, "delete_action", runs, post="yes")
    [said] = messages_of(response)
    assert said.startswith("Deleted 2 runs; 1 refused: 1 not_finished")
    assert list(Run.objects.all()) == [runs[2]]


def test_all_matching_names_the_count_and_filter_and_works_in_batches(
    owner: Any, other: Any, root: Any
) -> None:
    """ "Select all N runs" on a filtered list: the confirmation names the count and the
    filter in words; yes retries every match (in batches of 2), and nothing else."""
    matching = [failed(owner), failed(other), failed(owner)]
    done = start(noop, owner=owner)
    Run.objects.filter(pk=done.pk).update(status=RunStatus.DONE)
    client = client_of(root)
    url = f"{RUNS}?phase=failed"
    page = act(client, "retry_action", matching[:1], url, index="0", select_across="1")
    text = page.content.decode()
    assert "Retry all 3 runs matching this filter?" in text
    assert "phase is failed" in text
    assert Run.objects.count() == 4
    with override_settings(WEFT_BULK_BATCH_SIZE=2):
        response = act(client, "retry_action", matching[:1], url, post="yes", select_across="1")
    assert messages_of(response) == ["Retried 3 runs."]
    assert {run.retry_of_id for run in Run.objects.filter(retry_of__isnull=False)} == {
        run.pk for run in matching
    }
    filtered = f"{RUNS}?phase=failed&owner__id__exact={owner.pk}&q=noop"
    page = act(client, "abort_action", matching[:1], filtered, index="0", select_across="1")
    text = page.content.decode()
    assert "Abort all 2 runs matching this filter?" in text
    assert "phase is failed" in text
    assert "owner is owner" in text
    assert "search is “noop”" in text


def test_bulk_actions_need_a_post_with_the_csrf_token(owner: Any) -> None:
    run = failed(owner)
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    data = {"action": "retry_action", "_selected_action": [str(run.pk)], "index": "0"}
    assert client.post(RUNS, data).status_code == 403
    client.get(RUNS, data)
    assert Run.objects.count() == 1


def test_run_page_links_a_retry_both_ways_and_keeps_the_schedule(owner: Any) -> None:
    schedule = Schedule.objects.create(
        name="hourly", job="tests.noop", every=timedelta(hours=1), owner=owner
    )
    run = failed(owner, schedule=schedule)
    client = client_of(owner)
    act(client, "retry_action", [run], index="0")
    act(client, "retry_action", [run], index="0")
    first, second = Run.objects.filter(retry_of=run).order_by("created_at", "pk")
    original = client.get(reverse("admin:django_weft_run_change", args=[run.pk])).content.decode()
    assert "Retried as" in original
    for retry in (first, second):
        assert reverse("admin:django_weft_run_change", args=[retry.pk]) in original
    page = client.get(reverse("admin:django_weft_run_change", args=[first.pk])).content.decode()
    assert "Retry of" in page
    assert reverse("admin:django_weft_run_change", args=[run.pk]) in page
    assert reverse("admin:django_weft_schedule_change", args=[schedule.pk]) in page
    assert first.schedule == schedule


def test_all_matching_without_a_filter_says_every_run_and_words_the_date_filter(
    root: Any, owner: Any, other: Any
) -> None:
    """No filter: "every run"; the created-date filter is worded by its choice too; the
    owner's delete of another user's run is refused and counted."""
    runs = [failed(owner), failed(other)]
    client = client_of(root)
    page = act(client, "delete_action", runs[:1], index="0", select_across="1")
    assert "Delete all 2 runs matching this filter?" in page.content.decode()
    assert "No filter: every run." in page.content.decode()
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    past_week = {
        "created_at__gte": str(today - timedelta(days=7)),
        "created_at__lt": str(today + timedelta(days=1)),
    }
    dated = f"{RUNS}?{urlencode(past_week)}"
    page = act(client, "delete_action", runs[:1], dated, index="0", select_across="1")
    assert "is Past 7 days" in page.content.decode()
    assert "created_at__gte" not in page.content.decode()
    response = act(client_of(owner), "delete_action", runs, post="yes")
    [said] = messages_of(response)
    assert said.startswith("Deleted 1 run; 1 refused: 1 forbidden")
    assert "django_weft.delete_run" in said
    assert list(Run.objects.all()) == [runs[1]]


def test_all_matching_judges_only_the_runs_the_user_may_act_on(owner: Any, other: Any) -> None:
    """*Delete* of all 30 matching runs by a user without delete_run who owns one: that
    one is deleted, the 29 others are counted as forbidden without being judged one by
    one (no savepoint each), and left as they were."""
    mine = failed(owner)
    for _ in range(29):
        failed(other)
    with CaptureQueriesContext(connection) as captured:
        response = act(client_of(owner), "delete_action", [mine], post="yes", select_across="1")
    [said] = messages_of(response)
    assert said == (
        "Deleted 1 run; 29 refused: 29 forbidden (you may not delete runs that are not "
        "yours (needs django_weft.delete_run))."
    )
    assert savepoints(captured) < 29
    assert Run.objects.count() == 29
    assert not Run.objects.filter(owner=owner).exists()


def test_confirmation_lists_the_newest_runs_and_counts_the_rest(root: Any) -> None:
    """Twelve matching runs: the confirmation lists the ten newest, each linked to its
    page, and says two more; retry keeps the admin's plain button, abort and delete take
    Django's red of a deletion."""
    runs = [failed(root) for _ in range(12)]
    for age, run in enumerate(reversed(runs)):
        Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=age))
    client = client_of(root)
    url = f"{RUNS}?phase=failed"
    page = act(client, "retry_action", runs[:1], url, index="0", select_across="1")
    text = page.content.decode()
    for run in runs[2:]:
        assert f'href="{RUNS}{run.pk}/change/"' in text
    for run in runs[:2]:
        assert f'href="{RUNS}{run.pk}/change/"' not in text
    assert "and 2 more runs" in text
    assert "weft-bulk-undoable" in text
    deleting = act(client, "delete_action", runs[:3], index="0").content.decode()
    assert "more run" not in deleting
    assert "delete-confirmation" in deleting
    assert "weft-bulk-undoable" not in deleting
    assert Run.objects.count() == 12

"""Failures grouped by error: the overview lists the day's groups with their counts and
first and last seen, each linked to the run list's *error* filter, which keeps that
group's failed runs and is offered only to those who see every run in full."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
from django.utils import timezone

from django_weft.console.failures import failure_groups
from django_weft.models import Run, RunStatus
from tests.console.test_console_runs import OVERVIEW, client_of, finished_run, staff
from tests.jobs import broken, noop

pytestmark = pytest.mark.django_db

RUNS = "/admin/django_weft/run/"
DOWN = {"error_type": "ConnectionError", "error_message": "503 Service Unavailable"}


def failed(job: Any, minutes_ago: float, status: str = RunStatus.FAILED, **error: str) -> Run:
    return finished_run(job, status, timedelta(minutes=minutes_ago), **(error or DOWN))


@pytest.fixture
def day_of_failures() -> dict[str, list[Run]]:
    """Three runs of two jobs down on one error, one on another, and what is no failure
    of the day: a failure of two days ago, a done run."""
    return {
        "down": [failed(noop, 30), failed(broken, 90), failed(noop, 5, RunStatus.LOST)],
        "bad row": [failed(broken, 60, error_type="ValueError", error_message="bad row 7")],
        "old": [failed(noop, 2 * 24 * 60)],
        "done": [finished_run(noop, RunStatus.DONE, timedelta(minutes=1), **DOWN)],
    }


def test_failures_are_grouped_by_class_and_message_latest_seen_first(
    day_of_failures: dict[str, list[Run]],
) -> None:
    now = timezone.now()
    down, bad_row = failure_groups(now)
    assert (down.error_type, down.error_message, down.runs) == (
        "ConnectionError",
        "503 Service Unavailable",
        3,
    )
    assert (down.job, down.jobs) == ("", 2), "two jobs: named by their count"
    runs = day_of_failures["down"]
    assert down.first_seen == min(run.finished_at for run in runs)
    assert down.last_seen == max(run.finished_at for run in runs)
    assert (bad_row.runs, bad_row.job, bad_row.choice) == (
        1,
        "tests.broken",
        "ValueError: bad row 7",
    )
    assert failure_groups(now, shown=1) == [down]


def test_the_overview_links_each_group_to_its_runs(
    day_of_failures: dict[str, list[Run]],
) -> None:
    """The overview shows a group once with its count; its link lists exactly its runs."""
    client = client_of(staff("viewer", "view_run"))
    page = client.get(OVERVIEW).content.decode()
    assert page.count("503 Service Unavailable") == 1
    link = f"{RUNS}?error={quote('ConnectionError: 503 Service Unavailable', safe='')}"
    assert f'href="{link}">3 runs</a>' in page
    assert 'href="/admin/django_weft/run/?error=ValueError%3A%20bad%20row%207">1 run</a>' in page
    listed = client.get(link).context["cl"].result_list
    # The failure of two days ago is of the group too; the done run is not.
    expected = day_of_failures["down"] + day_of_failures["old"]
    assert {run.pk for run in listed} == {run.pk for run in expected}


def test_the_run_list_offers_the_groups_as_its_error_filter(
    day_of_failures: dict[str, list[Run]],
) -> None:
    page = client_of(staff("viewer", "view_run")).get(RUNS).content.decode()
    assert "By error" in page
    assert "ConnectionError: 503 Service Unavailable (3)" in page
    assert "ValueError: bad row 7 (1)" in page


def test_the_error_filter_is_refused_to_who_sees_runs_as_a_guest(
    day_of_failures: dict[str, list[Run]],
) -> None:
    """Errors are not in the guest view: the filter is not offered, and naming it in the
    address is refused as any other hidden field's filter is."""
    guest = client_of(staff("operator", "add_run", "change_run"))
    page = guest.get(RUNS)
    assert page.status_code == 200
    assert "By error" not in page.content.decode()
    refused = guest.get(RUNS, {"error": "ConnectionError: 503 Service Unavailable"})
    assert refused.status_code == 400


def test_an_older_error_chosen_is_named_in_the_sidebar() -> None:
    """A group no longer among the day's is still shown chosen, not as no choice."""
    run = failed(noop, 3 * 24 * 60, error_type="KeyError", error_message="'sku'")
    client = client_of(staff("viewer", "view_run"))
    response = client.get(RUNS, {"error": "KeyError: 'sku'"})
    assert [listed.pk for listed in response.context["cl"].result_list] == [run.pk]
    (spec,) = [spec for spec in response.context["cl"].filter_specs if spec.title == "error"]
    chosen = [
        choice["display"] for choice in spec.choices(response.context["cl"]) if choice["selected"]
    ]
    assert chosen == ["KeyError: 'sku'"]

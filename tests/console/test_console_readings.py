"""What the console prints: the run list's phase filter (blocked told apart from queued)
and the overview's cards that link to it; each coming fire's time once, with its zone;
every date of every page in the console's format."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone

from django_weft.models import Document, Module, Run, RunStatus, Schedule, WorkerProcess
from django_weft.operations import start
from tests.jobs import noop

pytestmark = pytest.mark.django_db

RUNS = reverse("admin:django_weft_run_changelist")
#: A moment as the console prints it: to the second, with the zone's name.
MOMENT = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z][A-Za-z0-9+-]*"


@pytest.fixture
def client() -> Client:
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(root)
    return client


def listed(client: Client, **query: str) -> set[str]:
    response = client.get(RUNS, query)
    assert response.status_code == 200
    return {str(run.pk) for run in response.context["cl"].result_list}


def test_console_phase_filter_tells_blocked_from_queued(client: Client) -> None:
    """``?phase=blocked`` lists the queued runs whose job version is not deployed;
    ``?phase=queued`` the queued runs that can run; any other phase is its status."""
    runnable = start(noop)
    blocked = start(noop)
    Run.objects.filter(pk=blocked.pk).update(job_version=99)
    done = start(noop)
    Run.objects.filter(pk=done.pk).update(status=RunStatus.DONE, job_version=99)
    assert listed(client, phase="blocked") == {str(blocked.pk)}
    assert listed(client, phase="queued") == {str(runnable.pk)}
    assert listed(client, phase="done") == {str(done.pk)}
    assert listed(client) == {str(runnable.pk), str(blocked.pk), str(done.pk)}


def test_console_phase_filter_refuses_an_unknown_phase(client: Client) -> None:
    """An unknown phase is the admin's "invalid lookup" (a redirect with ``e=1``)."""
    response = client.get(RUNS, {"phase": "sleeping"})
    assert response.status_code == 302
    assert response["Location"].endswith("?e=1")


def test_console_overview_cards_link_to_the_list_of_their_phase(client: Client) -> None:
    """Each card opens the run list filtered to what it counts: blocked to ``?phase=blocked``."""
    page = client.get(reverse("admin:django_weft_overview_changelist")).content.decode()
    for phase in ("queued", "blocked", "running", "done", "failed", "aborted", "lost"):
        assert f'href="{RUNS}?phase={phase}"' in page, phase
    assert "status__exact" not in page


@override_settings(TIME_ZONE="UTC")
def test_console_overview_prints_each_coming_fire_once_with_its_zone(client: Client) -> None:
    """A fire is printed in the console's zone; in its schedule's zone too only if that is
    another zone (no ``19:53 UTC (UTC)`` under ``19:53:00 UTC``)."""
    Schedule.objects.create(name="every 45", job="tests.noop", every=timedelta(minutes=45))
    Schedule.objects.create(
        name="paris", job="tests.noop", cron="*/5 * * * *", timezone="Europe/Paris"
    )
    page = client.get(reverse("admin:django_weft_overview_changelist")).content.decode()
    fires = page[
        page.index('id="weft-fires"') : page.index("</table>", page.index('id="weft-fires"'))
    ]
    rows = re.findall(r"<tr><td.*?</tr>", fires, re.S)
    every = next(row for row in rows if "every 45" in row)
    assert re.search(MOMENT, every)
    assert "(UTC)" not in every
    assert every.count("UTC") == 1
    paris = next(row for row in rows if "paris" in row)
    assert paris.count(" UTC") == 1
    assert "(Europe/Paris)" in paris


def test_console_dates_are_in_the_console_format_everywhere(client: Client) -> None:
    """Workers, modules and documents print their moments as the rest of the console does:
    ``2026-12-01 10:55:03 UTC``, never Django's ``Dec. 1, 2026, 10:55 a.m.``."""
    now = timezone.now()
    worker = WorkerProcess.objects.create(hostname="web-1", pid=7, started_at=now, last_beat=now)
    module = Module.objects.create(name="greeter", source="def hello():\n    return 1\n")
    document = Document.objects.create(key="ledger", schema="ledger", version=1, data={})
    pages = [
        reverse("admin:django_weft_workerprocess_changelist"),
        reverse("admin:django_weft_workerprocess_change", args=[worker.pk]),
        reverse("admin:django_weft_module_changelist"),
        reverse("admin:django_weft_module_change", args=[module.pk]),
        reverse("admin:django_weft_document_changelist"),
        reverse("admin:django_weft_document_change", args=[document.pk]),
    ]
    for path in pages:
        page = client.get(path).content.decode()
        assert re.search(MOMENT, page), path
        assert not re.search(r"\d{4}, \d{1,2}:\d\d (a|p)\.m\.", page), path
        assert not re.search(r"\b(a|p)\.m\.", page), path

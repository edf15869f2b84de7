"""The console's overview and run pages in the admin, through Django's test client.

Four kinds of user: a superuser; staff with ``view_run`` only (sees everything, may do
nothing); staff with ``add_run`` and ``change_run`` (may start and abort, sees other
people's runs as a guest); a signed-in user who is not staff (the admin sends them to
its login). Every refusal is shown as an admin message and writes nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from django_weft.console.overview import read_overview
from django_weft.engine.history.tallying import tally
from django_weft.models import (
    Attempt,
    Document,
    PausedQueue,
    Run,
    RunStatus,
    Schedule,
    WorkerProcess,
)
from django_weft.operations import start
from example_project.shell.jobs import shell
from tests.jobs import broken, noop, sleep

pytestmark = pytest.mark.django_db

OVERVIEW = "/admin/django_weft/overview/"


def staff(username: str, *codenames: str, is_staff: bool = True) -> Any:
    user = get_user_model().objects.create_user(username, password="pw", is_staff=is_staff)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return get_user_model().objects.get(pk=user.pk)  # a fresh permission cache


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root() -> Any:
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw")


@pytest.fixture
def viewer() -> Any:
    return staff("viewer", "view_run")


@pytest.fixture
def operator() -> Any:
    return staff("operator", "add_run", "change_run")


@pytest.fixture
def outsider() -> Any:
    return staff("outsider", "view_run", "add_run", "change_run", "pause_queue", is_staff=False)


def finished_run(job: Any, status: str, ago: timedelta, **fields: Any) -> Run:
    """A run of ``job`` that finished ``ago`` before now with ``status``."""
    run = start(job, fields.pop("args", None))
    ended = timezone.now() - ago
    Run.objects.filter(pk=run.pk).update(
        status=status, started_at=ended - timedelta(seconds=2), finished_at=ended, **fields
    )
    return Run.objects.get(pk=run.pk)


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]] if response.context else []


def followed(client: Client, url: str, data: dict[str, Any] | None = None) -> Any:
    return client.post(url, data or {}, follow=True)


# -- the overview ---------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["root", "viewer"])
def test_console_overview_is_linked_from_the_admin_index_and_the_app_index(
    request: pytest.FixtureRequest, who: str
) -> None:
    """Whoever may view runs finds "Overview" on the admin index and on the app's index."""
    client = client_of(request.getfixturevalue(who))
    for page in ("/admin/", "/admin/django_weft/"):
        assert f'href="{OVERVIEW}"' in client.get(page).content.decode()


def test_console_overview_is_refused_without_view_run(operator: Any, outsider: Any) -> None:
    """Staff without view_run neither see the link nor the page; non-staff go to the login."""
    client = client_of(operator)
    assert OVERVIEW not in client.get("/admin/").content.decode()
    assert client.get(OVERVIEW).status_code == 403
    assert client.get(f"{OVERVIEW}live/").status_code == 403
    outside = client_of(outsider).get(OVERVIEW)
    assert outside.status_code == 302
    assert outside["Location"].startswith("/admin/login/")


def test_console_overview_shows_every_figure(viewer: Any) -> None:
    """Runs by status, the last hour's outcomes and chart, queues, workers, coming fires
    and recent failures are all on the page."""
    start(sleep, {"seconds": 1})
    running = start(noop)
    worker = WorkerProcess.objects.create(
        hostname="web-1", pid=4242, started_at=timezone.now(), last_beat=timezone.now()
    )
    Run.objects.filter(pk=running.pk).update(
        status=RunStatus.RUNNING, worker=worker, started_at=timezone.now()
    )
    finished_run(noop, RunStatus.DONE, timedelta(minutes=5))
    finished_run(
        broken,
        RunStatus.FAILED,
        timedelta(minutes=7),
        error_type="RuntimeError",
        error_message="broken has no rows to work on",
    )
    finished_run(noop, RunStatus.DONE, timedelta(hours=5))
    PausedQueue.objects.create(queue="reports", paused_at=timezone.now())
    Schedule.objects.create(name="every 45", job="tests.noop", every=timedelta(minutes=45))
    response = client_of(viewer).get(OVERVIEW)
    assert response.status_code == 200
    page = response.content.decode()
    overview = response.context["overview"]
    assert overview.unfinished == {"queued": 1, "blocked": 0, "running": 1, "waiting": 0}
    assert overview.history.outcomes["done"] == 1
    assert overview.history.outcomes["failed"] == 1
    (chart,) = response.context["charts"]
    assert (chart["finished"], chart["failed"]) == (1, 1)
    # "finished" means ended, as on the cards: the chart names its two halves.
    assert "1 done or aborted, 1 failed or lost" in page
    assert ": 0 done or aborted, 0 failed or lost" in page
    day = client_of(viewer).get(OVERVIEW, {"range": "24h"}).context["overview"].history
    assert (day.outcomes["done"], day.outcomes["failed"]) == (2, 1)
    # Every queue a registered job names is listed (the test jobs' "cpu" among them).
    queues = {queue.name: queue for queue in overview.queues}
    assert [queue.name for queue in overview.queues] == sorted(queues)
    assert {"default", "reports"} <= set(queues)
    assert (queues["default"].queued, queues["default"].running) == (1, 1)
    assert queues["reports"].paused
    assert not queues["default"].paused
    assert [(w.name, len(w.runs)) for w in overview.workers] == [("web-1:4242", 1)]
    assert [line.schedule for line in overview.fires] == ["every 45"]
    assert [failure.error_message for failure in overview.failures] == [
        "broken has no rows to work on"
    ]
    for text in ("web-1:4242", "every 45", "broken has no rows to work on", "reports"):
        assert text in page
    assert page.count('<svg class="weft-chart"') == 1
    assert "django_weft/console.js" in page
    assert "Pause</button>" not in page, "view_run alone may not pause: no button"


def test_console_overview_reads_in_eleven_queries(django_assert_num_queries: Any) -> None:
    """The figures cost eleven queries whatever the number of runs, queues and workers (once
    the history is counted; before, the summary rows are not asked for)."""
    worker = WorkerProcess.objects.create(
        hostname="w", pid=1, started_at=timezone.now(), last_beat=timezone.now()
    )
    for index in range(30):
        run = finished_run(noop, RunStatus.DONE, timedelta(minutes=index * 50))
        Run.objects.filter(pk=run.pk).update(queue=f"q{index % 4}")
        started = start(sleep, {"seconds": 1})
        Run.objects.filter(pk=started.pk).update(status=RunStatus.RUNNING, worker=worker)
    while tally(timezone.now()):
        pass
    with django_assert_num_queries(11):
        overview = read_overview(timezone.now(), "24h", "queue")
    # The last one, 50 * 29 minutes ago, is over a day old.
    assert sum(series.finished for series in overview.history.series) == 29
    assert {series.key for series in overview.history.series} == {"q0", "q1", "q2", "q3"}
    assert overview.unfinished["running"] == 30


def test_console_overview_counts_runs_of_undeployed_versions_as_blocked(viewer: Any) -> None:
    """A blocked run is in the blocked card and beside its queue's queued runs, linked to
    the list of them, and not the queue's oldest queued run; a waiting run (asleep) is
    in a card of its own, in no queue's line: the cards and the table agree."""
    blocked = start(noop)
    Run.objects.filter(pk=blocked.pk).update(
        job_version=99, created_at=timezone.now() - timedelta(hours=1)
    )
    queued = start(noop)
    asleep = start(noop)
    Run.objects.filter(pk=asleep.pk).update(status=RunStatus.WAITING)
    overview = read_overview(timezone.now())
    assert overview.unfinished == {"queued": 1, "blocked": 1, "running": 0, "waiting": 1}
    (default,) = [queue for queue in overview.queues if queue.name == "default"]
    assert (default.queued, default.blocked) == (1, 1)
    assert default.oldest_waiting == Run.objects.get(pk=queued.pk).created_at
    page = client_of(viewer).get(OVERVIEW).content.decode()
    assert '?phase=blocked&amp;queue__exact=default">+ 1 blocked</a>' in page
    assert '?phase=waiting"><span class="weft-count" data-status="waiting">1</span>' in page


def test_console_overview_live_fragment_is_the_figures_alone(root: Any) -> None:
    page = client_of(root).get(f"{OVERVIEW}live/").content.decode()
    assert 'id="weft-counts"' in page
    assert "<html" not in page


def test_console_pause_and_resume_a_queue(root: Any) -> None:
    """The buttons pause the queue for every worker, then resume it, with a message each."""
    client = client_of(root)
    assert "Pause</button>" in client.get(OVERVIEW).content.decode()
    response = followed(client, f"{OVERVIEW}queues/pause/", {"queue": "default"})
    assert messages_of(response) == [
        "Paused queue default: no worker claims its runs until it is resumed."
    ]
    assert PausedQueue.objects.get().paused_by == root
    assert "Resume</button>" in response.content.decode()
    response = followed(client, f"{OVERVIEW}queues/pause/", {"queue": "default"})
    assert messages_of(response) == ["Queue default was paused already."]
    response = followed(client, f"{OVERVIEW}queues/resume/", {"queue": "default"})
    assert messages_of(response) == ["Resumed queue default: workers claim its runs again."]
    assert not PausedQueue.objects.exists()


def test_console_pause_refused_without_the_permission(viewer: Any, outsider: Any) -> None:
    """view_run alone may not pause: the refusal is a message and nothing is written."""
    response = followed(client_of(viewer), f"{OVERVIEW}queues/pause/", {"queue": "default"})
    assert messages_of(response) == [
        "pause queue default: you may not pause queue default (needs django_weft.pause_queue)"
    ]
    assert not PausedQueue.objects.exists()
    PausedQueue.objects.create(queue="default", paused_at=timezone.now())
    followed(client_of(viewer), f"{OVERVIEW}queues/resume/", {"queue": "default"})
    assert PausedQueue.objects.count() == 1
    outside = client_of(outsider).post(f"{OVERVIEW}queues/resume/", {"queue": "default"})
    assert outside.status_code == 302
    assert outside["Location"].startswith("/admin/login/")
    assert PausedQueue.objects.count() == 1


def test_console_pause_needs_a_post_with_csrf(root: Any) -> None:
    client = client_of(root)
    assert client.get(f"{OVERVIEW}queues/pause/?queue=default").status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(root)
    assert strict.post(f"{OVERVIEW}queues/pause/", {"queue": "default"}).status_code == 403
    assert not PausedQueue.objects.exists()


# -- a run's page ---------------------------------------------------------------------------


def run_page(client: Client, run: Run) -> Any:
    return client.get(reverse("admin:django_weft_run_change", args=[run.pk]))


def test_console_run_page_shows_output_as_a_terminal(root: Any) -> None:
    """The output is rendered with its colours, escaped; args and result as indented JSON;
    times to the second with the zone; the duration; no form and no Save button."""
    run = start(shell, {"command": "make test", "lines": 2})
    assert run.state is not None
    run.state.data = {"output": "\x1b[32mok\x1b[0m <b>1</b>\nline 2\n", "exit": None}
    run.state.save()
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.DONE,
        attempt=1,
        started_at=datetime(2026, 3, 7, 11, 0, 0, tzinfo=UTC),
        finished_at=datetime(2026, 3, 7, 11, 3, 5, 500000, tzinfo=UTC),
        result={"exit": 0, "output": "ok\nline 2\n"},
    )
    page = run_page(client_of(root), Run.objects.get(pk=run.pk)).content.decode()
    assert '<span class="weft-fg-2">ok</span> &lt;b&gt;1&lt;/b&gt;\nline 2\n</pre>' in page
    assert "\n  &quot;command&quot;: &quot;make test&quot;" in page, "indented JSON"
    assert "\n  &quot;lines&quot;: 2" in page
    assert "&quot;exit&quot;: 0" in page
    assert "2026-03-07 11:00:00 UTC" in page
    assert "2026-03-07 11:03:05 UTC" in page
    assert "3 min 05 s" in page
    assert 'id="run_form"' not in page
    assert 'name="_save"' not in page
    assert "Retry</button>" in page
    assert "Abort</button>" not in page


def test_console_run_page_renders_hostile_output(root: Any) -> None:
    """``ESC[``, 5,000 digits and ``m`` in a run's output is dropped: the page answers 200
    with the text around it (it was a 500)."""
    run = start(shell, {"command": "cat junk", "lines": 1})
    assert run.state is not None
    run.state.data = {"output": "before \x1b[" + "7" * 5000 + "mafter\n", "exit": None}
    run.state.save()
    response = run_page(client_of(root), run)
    assert response.status_code == 200
    assert "before after\n</pre>" in response.content.decode()


def test_console_run_page_lists_every_attempt_with_its_traceback(root: Any) -> None:
    run = finished_run(
        broken,
        RunStatus.FAILED,
        timedelta(minutes=1),
        attempt=2,
        error_type="RuntimeError",
        error_message="second time",
        error_traceback=(
            'Traceback (most recent call last):\n  File "jobs.py", line 2\n'
            "RuntimeError: second time"
        ),
    )
    Attempt.objects.create(
        run=run,
        number=1,
        status=RunStatus.FAILED,
        started_at=timezone.now() - timedelta(minutes=3),
        ended_at=timezone.now() - timedelta(minutes=2),
        error_type="RuntimeError",
        error_message="first time",
        error_traceback="Traceback (most recent call last):\nRuntimeError: first time",
    )
    page = run_page(client_of(root), run).content.decode()
    assert page.index("Attempt 1") < page.index("first time") < page.index("Attempt 2")
    assert page.index("Attempt 2") < page.index("RuntimeError: second time")
    assert "File &quot;jobs.py&quot;, line 2" in page
    assert "1 min 00 s" in page


def test_console_run_page_shows_an_earlier_attempts_output_and_the_time_in_all(
    root: Any,
) -> None:
    """A retried run's first attempt shows the output it left (folded, coloured as the
    run's terminal), and the page says how long the run took from its first attempt's
    start, beside its latest attempt's duration."""
    run = finished_run(noop, RunStatus.DONE, timedelta(minutes=1), attempt=2)
    assert run.finished_at is not None
    Attempt.objects.create(
        run=run,
        number=1,
        status=RunStatus.FAILED,
        started_at=run.finished_at - timedelta(minutes=2),
        ended_at=run.finished_at - timedelta(minutes=1),
        error_type="ConnectionError",
        error_message="the mail server hung up",
        output="\x1b[32mconnected\x1b[0m, then <lost>\n",
    )
    page = run_page(client_of(root), run).content.decode()
    section = page[page.index("Attempt 1") : page.index("Attempt 2")]
    assert '<details class="weft-attempt-output"><summary>Output</summary>' in section
    assert "connected</span>, then &lt;lost&gt;" in section
    assert "in all, from the first attempt" in page
    total = page[page.index('id="weft-run-total"') :]
    assert total[: total.index("</td>")].endswith(">2 min 00 s")


def test_console_run_page_for_a_guest_hides_output_and_errors(operator: Any, root: Any) -> None:
    """Staff with change_run but not view_run see someone else's run as a guest."""
    run = finished_run(
        broken, RunStatus.FAILED, timedelta(minutes=1), error_message="secret detail"
    )
    Run.objects.filter(pk=run.pk).update(owner=root)
    page = run_page(client_of(operator), run).content.decode()
    assert "secret detail" not in page
    assert 'id="weft-terminal"' not in page
    assert "as a guest" in page
    assert "Retry</button>" not in page


def test_console_run_page_without_any_run_permission_is_refused() -> None:
    client = client_of(staff("nobody"))
    run = start(noop)
    assert run_page(client, run).status_code == 403


def test_console_abort_button_aborts(root: Any) -> None:
    run = start(sleep, {"seconds": 60})
    page = run_page(client_of(root), run).content.decode()
    assert "Abort</button>" in page
    assert "Retry</button>" not in page
    response = followed(client_of(root), f"/admin/django_weft/run/{run.pk}/abort/")
    assert messages_of(response) == [
        f"Abort requested for run {run.pk}: it stops at its next sleep() or check()."
    ]
    assert Run.objects.get(pk=run.pk).status == RunStatus.ABORTED  # never claimed: at once


def test_console_abort_of_a_running_run_is_a_request(operator: Any) -> None:
    run = start(sleep, {"seconds": 60})
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, started_at=timezone.now())
    followed(client_of(operator), f"/admin/django_weft/run/{run.pk}/abort/")
    stored = Run.objects.get(pk=run.pk)
    assert stored.status == RunStatus.RUNNING
    assert stored.abort_requested_at is not None
    response = followed(client_of(operator), f"/admin/django_weft/run/{run.pk}/abort/")
    assert messages_of(response) == [f"Abort of run {run.pk} was requested already."]


def test_console_abort_refusals_are_messages_and_write_nothing(viewer: Any, root: Any) -> None:
    run = start(sleep, {"seconds": 60})
    Run.objects.filter(pk=run.pk).update(owner=root)
    page = run_page(client_of(viewer), run).content.decode()
    assert "Abort</button>" not in page
    response = followed(client_of(viewer), f"/admin/django_weft/run/{run.pk}/abort/")
    assert messages_of(response) == [
        f"run {run.pk}: you may not abort run {run.pk} "
        "(needs django_weft.change_run, or to be its owner)"
    ]
    assert Run.objects.get(pk=run.pk).abort_requested_at is None
    done = finished_run(noop, RunStatus.DONE, timedelta(minutes=1))
    response = followed(client_of(root), f"/admin/django_weft/run/{done.pk}/abort/")
    assert len(messages_of(response)) == 1
    assert "finished" in messages_of(response)[0]
    assert Run.objects.get(pk=done.pk).abort_requested_at is None


def test_console_abort_and_retry_need_a_post(root: Any, outsider: Any) -> None:
    run = start(sleep, {"seconds": 60})
    client = client_of(root)
    for action in ("abort", "retry"):
        assert client.get(f"/admin/django_weft/run/{run.pk}/{action}/").status_code == 405
        outside = client_of(outsider).post(f"/admin/django_weft/run/{run.pk}/{action}/")
        assert outside.status_code == 302
        assert outside["Location"].startswith("/admin/login/")
    stored = Run.objects.get(pk=run.pk)
    assert stored.abort_requested_at is None
    assert Run.objects.count() == 1
    assert (
        client.post(
            "/admin/django_weft/run/00000000-0000-0000-0000-000000000000/abort/"
        ).status_code
        == 404
    )


def test_console_retry_starts_a_new_run_with_the_same_args(root: Any) -> None:
    """Retry is a new run with the args, owned by whoever retried; its page opens."""
    run = finished_run(
        shell, RunStatus.FAILED, timedelta(minutes=1), args={"command": "ls", "lines": 3}
    )
    response = followed(client_of(root), f"/admin/django_weft/run/{run.pk}/retry/")
    retried = Run.objects.exclude(pk=run.pk).get()
    assert (retried.job, retried.args, retried.owner) == ("shell.run", run.args, root)
    assert messages_of(response) == [f"Run {run.pk} retried as run {retried.pk}."]
    assert response.redirect_chain[-1][0] == f"/admin/django_weft/run/{retried.pk}/change/"


def test_console_retry_refusals_are_messages_and_write_nothing(
    viewer: Any, operator: Any, root: Any
) -> None:
    """view_run alone may not start runs; add_run without view_run may not reuse someone
    else's args; a run still going cannot be retried."""
    run = finished_run(noop, RunStatus.FAILED, timedelta(minutes=1))
    Run.objects.filter(pk=run.pk).update(owner=root)
    response = followed(client_of(viewer), f"/admin/django_weft/run/{run.pk}/retry/")
    assert messages_of(response) == [
        f"retry run {run.pk}: you may not start runs (needs django_weft.add_run)"
    ]
    response = followed(client_of(operator), f"/admin/django_weft/run/{run.pk}/retry/")
    assert messages_of(response) == [
        f"retry run {run.pk}: you may not retry run {run.pk} "
        "(needs django_weft.view_run, or to be its owner)"
    ]
    going = start(sleep, {"seconds": 60})
    response = followed(client_of(root), f"/admin/django_weft/run/{going.pk}/retry/")
    assert messages_of(response) == [
        f"retry run {going.pk}: run {going.pk} is still queued; abort it or wait for it to finish"
    ]
    assert Run.objects.count() == 2


def test_console_retry_by_its_owner_without_view_run(operator: Any) -> None:
    """The owner sees their own run in full, so add_run is enough to retry it."""
    run = finished_run(noop, RunStatus.FAILED, timedelta(minutes=1))
    Run.objects.filter(pk=run.pk).update(owner=operator)
    page = run_page(client_of(operator), run).content.decode()
    assert "Retry</button>" in page
    followed(client_of(operator), f"/admin/django_weft/run/{run.pk}/retry/")
    assert Run.objects.count() == 2


# -- the run list ---------------------------------------------------------------------------


def test_console_run_list_shows_short_ids_times_and_durations(viewer: Any, root: Any) -> None:
    """Each row: the short id, who or which schedule started it, the time to the second
    with its zone, the duration."""
    run = finished_run(noop, RunStatus.DONE, timedelta(minutes=1))
    fired = finished_run(noop, RunStatus.DONE, timedelta(minutes=2))
    schedule = Schedule.objects.create(
        name="every 45", job="tests.noop", every=timedelta(minutes=45)
    )
    Run.objects.filter(pk=run.pk).update(owner=root)
    Run.objects.filter(pk=fired.pk).update(schedule=schedule)
    page = client_of(viewer).get("/admin/django_weft/run/").content.decode()
    assert f"<code title='{run.pk}'>{str(run.pk)[:8]}</code>" in page
    assert "2.00 s" in page
    assert f"{timezone.localtime(run.created_at):%Y-%m-%d<br>%H:%M:%S} UTC" in page
    assert "django_weft/console.js" in page
    assert '<td class="field-started_by">root</td>' in page
    assert "schedule</span> every 45" in page


def test_console_run_list_is_titled_runs_not_a_form_to_change(operator: Any) -> None:
    """Runs are acted on, never edited: the list is "Runs", for those who may act too."""
    page = client_of(operator).get("/admin/django_weft/run/").content.decode()
    assert "<h1>Runs</h1>" in page
    assert "<title>Runs |" in page
    assert "to change" not in page


def test_console_run_list_searches_args(viewer: Any) -> None:
    wanted = start(shell, {"command": "deploy the-blue-one", "lines": 1})
    other = start(sleep, {"seconds": 12.5})
    page = client_of(viewer).get("/admin/django_weft/run/", {"q": "the-blue-one"}).content.decode()
    assert str(wanted.pk) in page
    assert str(other.pk) not in page


# -- the other read-only pages --------------------------------------------------------------


def test_console_read_only_pages_have_no_save_button(root: Any) -> None:
    worker = WorkerProcess.objects.create(
        hostname="w", pid=1, started_at=timezone.now(), last_beat=timezone.now()
    )
    document = Document.objects.create(key="k", schema="s", data={"lines": ["a", "b"]})
    client = client_of(root)
    for url in (
        reverse("admin:django_weft_workerprocess_change", args=[worker.pk]),
        reverse("admin:django_weft_document_change", args=[document.pk]),
    ):
        page = client.get(url).content.decode()
        assert 'name="_save"' not in page
        assert 'name="_continue"' not in page
    assert "<pre class='weft-json'>{\n  &quot;lines&quot;: [\n    &quot;a&quot;," in page
    listing = client.get(reverse("admin:django_weft_workerprocess_changelist")).content.decode()
    assert "running" in listing


def test_console_pause_needs_a_queue_name(root: Any) -> None:
    response = followed(client_of(root), f"{OVERVIEW}queues/pause/", {"queue": "  "})
    assert messages_of(response) == ["Name the queue to pause."]
    assert not PausedQueue.objects.exists()


def test_console_run_page_of_a_job_without_output(root: Any) -> None:
    """A job with no state document has no terminal, and the page says so."""
    run = finished_run(noop, RunStatus.DONE, timedelta(minutes=1), attempt=1, result=None)
    page = run_page(client_of(root), run).content.decode()
    assert 'id="weft-terminal"' not in page
    assert "No output." in page
    assert "Attempt 1" in page

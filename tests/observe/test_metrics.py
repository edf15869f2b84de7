"""The metrics endpoint after a known workload: counters from this process's events,
gauges from the database, each number checked; and who may read it."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.db import OperationalError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from django_weft.engine.database.outages import Outage
from django_weft.models import PausedQueue, Schedule
from django_weft.observe import checks as observe_checks
from django_weft.observe import metrics, views
from django_weft.operations import start
from django_weft.sandbox.calls import call_module
from django_weft.sandbox.errors import ModuleRaised
from django_weft.testing import Rehearsal
from tests.observe.conftest import METRICS, samples, scrape, value
from tests.sandbox_helpers import limits, store  # noqa: F401  (limits: a fixture)

HOUR = timedelta(hours=1)


def grown(before: dict[Any, float], after: dict[Any, float], name: str, **labels: str) -> float:
    """How much one sample grew between two scrapes."""
    return value(after, name, **labels) - value(before, name, **labels)


def test_metrics_after_a_known_workload(rehearsal: Rehearsal) -> None:
    """Two runs that finish done, one that fails and an hourly fire are counted by job and
    status, with their durations and the fire's lateness; then three queued runs, left
    waiting 90 s with the worker down, show as the default queue's depth and oldest wait."""
    Schedule.objects.create(name="hourly", job="tests.noop", cron="0 * * * *", timezone="UTC")
    before = scrape()
    start("tests.noop")
    start("tests.noop")
    start("tests.broken")
    rehearsal.advance(HOUR)  # runs the three, fires 12:00 on time, runs that too
    after = scrape()

    assert grown(before, after, "weft_runs_started_total", job="tests.noop", queue="default") == 3
    assert grown(before, after, "weft_runs_started_total", job="tests.broken", queue="default") == 1
    assert grown(before, after, "weft_runs_finished_total", job="tests.noop", status="done") == 3
    assert (
        grown(before, after, "weft_runs_finished_total", job="tests.broken", status="failed") == 1
    )
    assert grown(before, after, "weft_run_duration_seconds_count", job="tests.noop") == 3
    # The driven clock does not move while a run runs: every run took 0 s.
    assert grown(before, after, "weft_run_duration_seconds_sum", job="tests.noop") == 0
    assert grown(before, after, "weft_fires_total", job="tests.noop") == 1
    assert grown(before, after, "weft_fire_lateness_seconds_count", job="tests.noop") == 1
    assert grown(before, after, "weft_fire_lateness_seconds_sum", job="tests.noop") == 0
    assert value(after, "weft_workers_live") == 1
    assert value(after, "weft_database_up") == 1
    assert value(after, "weft_queue_depth", queue="default") == 0

    for _ in range(3):
        start("tests.noop")
    rehearsal.skip(timedelta(seconds=90))
    waiting = scrape()
    assert value(waiting, "weft_queue_depth", queue="default") == 3
    assert value(waiting, "weft_queue_oldest_waiting_seconds", queue="default") == 90
    # 90 s without a heartbeat is past WEFT_LOST_AFTER (30 s).
    assert value(waiting, "weft_workers_live") == 0


@pytest.mark.django_db
def test_metrics_list_every_queue_of_a_job_and_paused_ones_at_zero() -> None:
    """A queue with no runs is listed at depth 0 (not absent), a paused queue as paused."""
    PausedQueue.objects.create(queue="reports", paused_at="2026-03-07T11:00:00Z")
    scraped = scrape()
    assert value(scraped, "weft_queue_depth", queue="default") == 0
    assert value(scraped, "weft_queue_depth", queue="reports") == 0
    assert value(scraped, "weft_queue_paused", queue="reports") == 1
    assert value(scraped, "weft_queue_paused", queue="default") == 0


@pytest.mark.django_db
def test_metrics_read_the_database_in_six_queries_whatever_it_holds() -> None:
    """A scrape costs six queries (queued by queue, running and waiting by job, live
    workers, paused queues, flow limits), with one queue or many: nothing per queue,
    nothing over finished runs (each flow limit adds its counts: see tests/limits)."""
    with CaptureQueriesContext(connection) as one_queue:
        scrape()
    PausedQueue.objects.bulk_create(
        PausedQueue(queue=f"q{n}", paused_at="2026-03-07T11:00:00Z") for n in range(20)
    )
    for _ in range(5):
        start("tests.noop")
    with CaptureQueriesContext(connection) as many_queues:
        scrape()
    assert len(one_queue.captured_queries) == len(many_queues.captured_queries) == 6


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_metrics_count_sandbox_calls_by_outcome() -> None:
    """A module that answers counts as ``ok``, one that raises by its error's name."""
    store("def default():\n    return 1\n", name="tests/one")
    store("def default():\n    raise ValueError('no')\n", name="tests/raises")
    before = scrape()
    assert call_module("tests/one").value == 1
    with pytest.raises(ModuleRaised):
        call_module("tests/raises")
    after = scrape()
    assert grown(before, after, "weft_sandbox_calls_total", outcome="ok") == 1
    assert grown(before, after, "weft_sandbox_calls_total", outcome="ModuleRaised") == 1
    assert grown(before, after, "weft_sandbox_call_seconds_count") == 2


@pytest.mark.django_db
def test_metrics_count_a_worker_outage_and_its_length() -> None:
    """An outage (a streak of failed steps) counts once, is ongoing until a step works,
    and adds how long it lasted."""
    moments = iter([100.0, 100.5, 107.5])
    outage = Outage(logging.getLogger("tests.outage"), monotonic=lambda: next(moments))
    before = scrape()
    outage.failed("claim", OperationalError("server closed the connection"))
    outage.failed("claim", OperationalError("server closed the connection"))
    during = scrape()
    assert grown(before, during, "weft_outages_total") == 1
    assert value(during, "weft_outage_ongoing") == value(before, "weft_outage_ongoing") + 1
    assert outage.succeeded()
    after = scrape()
    assert grown(before, after, "weft_outage_seconds_total") == 7.5
    assert value(after, "weft_outage_ongoing") == value(before, "weft_outage_ongoing")


# -- who may read them -----------------------------------------------------------------------


@pytest.mark.django_db
def test_metrics_refuse_a_scrape_without_credentials() -> None:
    """No token, not signed in: 401 with a Bearer challenge, saying what would do."""
    answer = Client().get(METRICS)
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"] == 'Bearer realm="weft metrics"'
    assert answer.content.decode() == (
        "the metrics need a bearer token (WEFT_METRICS_TOKEN) or a signed-in user with "
        "django_weft.view_run"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("token", ["tests-only-metrics-tokem", "tests-only-metrics-token-2", ""])
def test_metrics_refuse_another_token(token: str) -> None:
    """A token that is not ``WEFT_METRICS_TOKEN`` (longer, shorter, one letter off) is 403."""
    answer = Client().get(METRICS, headers={"authorization": f"Bearer {token}x"})
    assert answer.status_code == 403
    assert answer.content.decode() == "the bearer token does not match WEFT_METRICS_TOKEN"


@pytest.mark.django_db
def test_metrics_refuse_every_token_when_none_is_set(settings: Any) -> None:
    """With ``WEFT_METRICS_TOKEN = None`` no token opens them, not even an empty one."""
    settings.WEFT_METRICS_TOKEN = None
    answers = {
        header: Client().get(METRICS, headers={"authorization": header}).status_code
        for header in ("Bearer tests-only-metrics-token", "Bearer None", "Bearer ", "Basic x")
    }
    # An empty bearer token or another scheme is no token at all: 401, as without a header.
    assert answers == {
        "Bearer tests-only-metrics-token": 403,
        "Bearer None": 403,
        "Bearer ": 401,
        "Basic x": 401,
    }


@pytest.mark.django_db
def test_metrics_refuse_a_user_without_view_run() -> None:
    """A signed-in user without ``view_run`` is refused, naming the permission."""
    client = Client()
    client.force_login(User.objects.create_user("guest"))
    answer = client.get(METRICS)
    assert answer.status_code == 403
    assert answer.content.decode() == "you may not read the metrics (needs django_weft.view_run)"


@pytest.mark.django_db
def test_metrics_answer_a_user_with_view_run() -> None:
    """An operator (``view_run``) reads them in the browser, signed in, with no token."""
    operator = User.objects.create_user("operator")
    operator.user_permissions.add(Permission.objects.get(codename="view_run"))
    client = Client()
    client.force_login(operator)
    answer = client.get(METRICS)
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain")
    assert ("weft_queue_depth", (("queue", "default"),)) in samples(answer.content.decode())


@pytest.mark.django_db
def test_metrics_answer_only_reads() -> None:
    """POST is not a scrape: 405."""
    headers = {"authorization": "Bearer tests-only-metrics-token"}
    assert Client().post(METRICS, headers=headers).status_code == 405


@pytest.fixture
def counters_never_connected() -> Iterator[None]:
    """This process as one that had no prometheus_client when it started: nothing counts
    weft's signals; connected again afterwards, as the app's start did."""
    for signal, _receiver, uid in metrics.RECEIVERS:
        signal.disconnect(dispatch_uid=uid)
    metrics.connect.cache_clear()
    try:
        yield
    finally:
        metrics.connect.cache_clear()
        metrics.connect()


def test_metrics_installed_into_a_running_server_count_from_the_first_scrape(
    rehearsal: Rehearsal, counters_never_connected: None
) -> None:
    """A process whose counters were never connected (prometheus_client installed while it
    ran) connects them at its first scrape: runs that finish afterwards are counted."""
    before = samples(metrics.exposition().decode())  # read without a scrape's connecting
    start("tests.noop")
    rehearsal.advance(timedelta(0))
    first = scrape()
    assert grown(before, first, "weft_runs_finished_total", job="tests.noop", status="done") == 0
    start("tests.noop")
    rehearsal.advance(timedelta(0))
    assert grown(first, scrape(), "weft_runs_finished_total", job="tests.noop", status="done") == 1


@pytest.fixture
def without_prometheus_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as one without the ``metrics`` extra: prometheus_client does not import."""
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    monkeypatch.delitem(sys.modules, "django_weft.observe.metrics")


@pytest.mark.django_db
@pytest.mark.usefixtures("without_prometheus_client")
def test_metrics_without_the_extra_say_what_to_install() -> None:
    """Without prometheus_client the endpoint answers 501 naming the extra, and E071
    says the same at start-up when a token is set."""
    answer = Client().get(METRICS, headers={"authorization": "Bearer tests-only-metrics-token"})
    assert answer.status_code == 501
    assert answer.content.decode() == views.NOT_INSTALLED
    assert answer.content.decode() == (
        "weft's metrics need prometheus_client: pip install 'django-weft[metrics]'"
    )
    found = observe_checks.check_observe_settings()
    assert [message.id for message in found] == ["django_weft.E071"]

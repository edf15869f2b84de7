"""Flow limits with four real ``runjobs`` processes on a throwaway PostgreSQL: a limit of
5 per key never has a sixth of that key running; a rate of 50 a second never begins 51
in any one-second window (checked from the stored begin times); a limit edited in the
console is obeyed by every worker from its next claim; a burst of debounced starts runs
once; limits hold through a database restart and give back a killed worker's slots."""

from __future__ import annotations

import bisect
import signal
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connections
from django.db.models import Count, QuerySet
from django.test import Client
from django.urls import reverse

from django_weft.jobs.registry import registry
from django_weft.models import FlowLimit, Run, RunStatus
from django_weft.operations import start
from django_weft.timing import clocks
from tests.faults.conftest import reachable
from tests.faults.servers import PostgresCluster
from tests.processes import Runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def limit(**fields: object) -> FlowLimit:
    return FlowLimit.objects.create(updated_at=clocks.now(), **fields)


def running(**args: object) -> int:
    found = Run.objects.filter(job="tests.limits.hold", status=RunStatus.RUNNING)
    for name, value in args.items():
        found = found.filter(**{f"args__{name}": value})
    return found.count()


def test_four_workers_never_run_a_sixth_of_a_key(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    limit(name="hold", job="tests.limits.hold", concurrency=5, per_key=True)
    hold = registry.get("tests.limits.hold")
    runs = [start(hold, {"tenant": "a", "seconds": 0.3}) for _ in range(30)]
    runs += [start(hold, {"tenant": "b", "seconds": 0.3}) for _ in range(10)]
    for _ in range(4):
        start_runjobs("--concurrency", "4")
    peak = {"a": 0, "b": 0}

    def drained() -> bool:
        for tenant in peak:
            peak[tenant] = max(peak[tenant], running(tenant=tenant))
        return not Run.objects.filter(pk__in=[run.pk for run in runs]).unfinished().exists()

    wait_for(drained, timeout=180, what="forty runs, five of a tenant at a time")
    assert peak["a"] <= 5, peak
    assert peak["b"] <= 5, peak
    ended = Run.objects.filter(pk__in=[run.pk for run in runs])
    assert {(run.status, run.attempt) for run in ended} == {(RunStatus.DONE, 1)}
    assert len({run.worker_id for run in ended}) > 1, "the workers shared the work"


def test_four_workers_never_begin_more_than_a_rate_in_any_window(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    limit(name="noop-rate", job="tests.noop", rate=50, period=timedelta(seconds=1))
    noop = registry.get("tests.noop")
    runs = [start(noop) for _ in range(200)]
    for _ in range(4):
        start_runjobs("--concurrency", "8")
    ended = Run.objects.filter(pk__in=[run.pk for run in runs])
    wait_for(lambda: not ended.unfinished().exists(), timeout=180, what="200 runs, 50 a second")
    begins = sorted(ended.values_list("started_at", flat=True))
    assert len(begins) == 200
    second = timedelta(seconds=1)
    busiest = max(
        bisect.bisect_left(begins, begin + second) - index for index, begin in enumerate(begins)
    )
    assert busiest <= 50, f"{busiest} began in one second"
    assert len(set(ended.values_list("worker_id", flat=True))) > 1


def test_a_limit_edited_in_the_console_is_obeyed_by_every_worker(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    row = limit(name="hold-all", job="tests.limits.hold", concurrency=1)
    hold = registry.get("tests.limits.hold")
    runs = [start(hold, {"tenant": "a", "seconds": 0.4}) for _ in range(16)]
    for _ in range(4):
        start_runjobs("--concurrency", "4")
    ended = Run.objects.filter(pk__in=[run.pk for run in runs])
    peak = [0]

    def some_ended() -> bool:
        peak[0] = max(peak[0], running())
        return ended.filter(status=RunStatus.DONE).count() >= 3

    wait_for(some_ended, timeout=120, what="three runs, one at a time")
    assert peak[0] <= 1
    operator = get_user_model().objects.create_superuser("ops", "ops@example.com", "ops")
    client = Client()
    client.force_login(operator)
    edited = client.post(
        reverse("admin:django_weft_flowlimit_change", args=[row.pk]),
        {"name": "hold-all", "job": "tests.limits.hold", "queue": "", "concurrency": "4"},
    )
    assert edited.status_code == 302, edited.content.decode()[:500]
    peak[0] = 0

    def drained() -> bool:
        peak[0] = max(peak[0], running())
        return not ended.unfinished().exists()

    wait_for(drained, timeout=120, what="the rest, four at a time")
    assert 1 <= peak[0] <= 4
    later = ended.filter(started_at__gt=FlowLimit.objects.get(pk=row.pk).updated_at)
    assert len(set(later.values_list("worker_id", flat=True))) > 1, "obeyed by several workers"


def test_a_burst_of_a_thousand_debounced_starts_runs_once_with_the_last_args(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    for _ in range(4):
        start_runjobs("--concurrency", "4")
    burst = registry.get("tests.limits.burst")
    started = {start(burst, {"number": number}).pk for number in range(1000)}
    assert len(started) == 1, "every start joined the first run"
    wait_for(
        lambda: Run.objects.filter(job="tests.limits.burst", status=RunStatus.DONE).exists(),
        timeout=120,
        what="the burst's run, once it was quiet",
    )
    (run,) = Run.objects.filter(job="tests.limits.burst")
    assert (run.args, run.result, run.attempt) == ({"number": 999}, 999, 1)


class Peaks:
    """The most runs of each tenant seen running at once, sampled from the database
    (each sample one committed state); a sample while the database is down is skipped."""

    def __init__(self, runs: QuerySet[Run]) -> None:
        self.runs = runs
        self.most: dict[str, int] = {}

    def sample(self) -> bool:
        try:
            counted = (
                self.runs.filter(status=RunStatus.RUNNING)
                .values_list("args__tenant")
                .annotate(count=Count("pk"))
                .order_by()
            )
            for tenant, count in counted:
                self.most[tenant] = max(self.most.get(tenant, 0), count)
            return True
        except DatabaseError:
            connections["default"].close()
            return False

    def until(self, condition: Callable[[], bool]) -> Callable[[], bool]:
        """``condition``, sampling before each look (False while the database is down)."""
        return lambda: self.sample() and condition()


def test_limits_hold_through_a_database_restart(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs]
) -> None:
    """Four workers drain two tenants' runs under 3 at once per tenant and 20 begins a
    second, and the database restarts midway: every run ends done, no tenant is ever seen
    with a fourth running, no second began more than 20 (from the stored begin times),
    and every worker is still up."""
    limit(name="hold", job="tests.limits.hold", concurrency=3, per_key=True)
    limit(name="hold-rate", job="tests.limits.hold", rate=20, period=timedelta(seconds=1))
    hold = registry.get("tests.limits.hold")
    runs = [start(hold, {"tenant": tenant, "seconds": 0.2}) for tenant in "ab" for _ in range(60)]
    ended = Run.objects.filter(pk__in=[run.pk for run in runs])
    peaks = Peaks(ended)
    workers = [start_runjobs("--concurrency", "4") for _ in range(4)]
    under_way = peaks.until(lambda: ended.filter(status=RunStatus.DONE).count() >= 30)
    wait_for(under_way, what="runs under way")
    postgres.restart("fast")
    wait_for(reachable, what="this process to reach the database again")
    drained = peaks.until(lambda: not ended.unfinished().exists())
    wait_for(drained, timeout=300, what="every run ended")
    assert set(ended.values_list("status", flat=True)) == {RunStatus.DONE}
    assert set(peaks.most) == {"a", "b"}, peaks.most
    assert max(peaks.most.values()) <= 3, f"a fourth of a tenant ran: {peaks.most}"
    begins = sorted(ended.values_list("started_at", flat=True))
    second = timedelta(seconds=1)
    busiest = max(
        bisect.bisect_left(begins, begin + second) - index for index, begin in enumerate(begins)
    )
    assert busiest <= 20, f"{busiest} began in one second"
    for worker in workers:
        assert worker.poll() is None, worker.output()


def test_a_killed_workers_slots_come_back_once_its_runs_are_lost(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """A worker holding both slots of a tenant's limit of 2 dies (SIGKILL) mid-run. Its
    runs end lost once it is seen dead, which gives the slots back: another worker runs
    the tenant's queued runs, each once, never more than 2 at once (sampled from the
    database), and nothing is left stuck behind the dead worker's slots."""
    limit(name="hold", job="tests.limits.hold", concurrency=2, per_key=True)
    hold = registry.get("tests.limits.hold")
    stuck = [start(hold, {"tenant": "a", "seconds": 3600}) for _ in range(2)]
    doomed = start_runjobs("--concurrency", "4")
    wait_for(lambda: running(tenant="a") == 2, what="the doomed worker to hold both slots")
    queued = [start(hold, {"tenant": "a", "seconds": 0.2}) for _ in range(6)]
    doomed.send_signal(signal.SIGKILL)
    doomed.finish()
    survivor = start_runjobs("--concurrency", "4")
    ended = Run.objects.filter(pk__in=[run.pk for run in stuck + queued])
    peaks = Peaks(ended)
    wait_for(peaks.until(lambda: not ended.unfinished().exists()), timeout=180, what="every run")
    lost = Run.objects.filter(pk__in=[run.pk for run in stuck])
    assert {(run.status, run.attempt) for run in lost} == {(RunStatus.LOST, 1)}
    began = Run.objects.filter(pk__in=[run.pk for run in queued])
    assert {(run.status, run.attempt) for run in began} == {(RunStatus.DONE, 1)}
    assert peaks.most == {"a": 2}, peaks.most
    assert survivor.poll() is None, survivor.output()

"""Flow limits at the claim (DESIGN.md section 10): concurrency per job, per key and per
queue, rates counted over a sliding window of begins, on the driven clock; a run over a
limit stays queued, never refused; a limit's row edited is obeyed at the next claim;
two claims at the same moment never both take a limit's last place; a job's limits in
code become rows a worker writes once, never undoing an edit."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from django_weft.engine.limits.budget import Budget, begins_sql, running_sql
from django_weft.engine.limits.defaults import write_defaults
from django_weft.engine.runs.claiming import claim, deployed_pairs, under_limits
from django_weft.jobs.limits import Limit
from django_weft.jobs.registry import job, registry
from django_weft.models import FlowBegin, FlowLimit, Run, RunStatus, WorkerProcess
from django_weft.operations import start
from django_weft.testing import Rehearsal
from tests.limits.jobs import DECLARED, tenant_of
from tests.threads import together

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def process() -> WorkerProcess:
    now = timezone.now()
    return WorkerProcess.objects.create(hostname="h", pid=1, started_at=now, last_beat=now)


def take(process: WorkerProcess, now: datetime | None = None, limit: int = 10) -> list[Run]:
    return claim(
        deployed_pairs(registry),
        limit=limit,
        worker=process,
        now=now or timezone.now(),
        queues=None,
    )


def end(runs: list[Run]) -> None:
    Run.objects.filter(pk__in=[run.pk for run in runs]).update(status=RunStatus.DONE)


def limit(**fields: object) -> FlowLimit:
    return FlowLimit.objects.create(updated_at=timezone.now(), **fields)


def test_a_jobs_concurrency_keeps_the_rest_queued_until_one_ends(process: WorkerProcess) -> None:
    limit(name="noop", job="tests.noop", concurrency=2)
    runs = [start(registry.get("tests.noop")) for _ in range(5)]
    first = take(process)
    assert [run.pk for run in first] == [run.pk for run in runs[:2]], "oldest first"
    assert take(process) == []
    assert Run.objects.filter(status=RunStatus.QUEUED).count() == 3, "queued, not refused"
    end(first[:1])
    assert [run.pk for run in take(process)] == [runs[2].pk]


def test_a_limit_per_key_holds_each_key_apart(process: WorkerProcess) -> None:
    sync = registry.get("tests.limits.sync")
    limit(name="sync", job="tests.limits.sync", concurrency=2, per_key=True)
    for number in range(4):
        start(sync, {"tenant": "a", "number": number})
    late = start(sync, {"tenant": "b"})
    first = take(process)
    assert [run.args["tenant"] for run in first] == ["a", "a", "b"]
    assert late.pk in {run.pk for run in first}, "b's run is not stuck behind a's backlog"
    assert take(process) == []
    end(first[:1])
    assert [(run.args["tenant"], run.args["number"]) for run in take(process)] == [("a", 2)]


def test_a_queues_limit_covers_every_job_in_it(process: WorkerProcess) -> None:
    limit(name="reports", queue="reports", concurrency=1)
    noop = registry.get("tests.noop")
    reports = [start(noop) for _ in range(2)]
    Run.objects.filter(pk__in=[run.pk for run in reports]).update(queue="reports")
    plain = start(noop)
    claimed = take(process)
    assert {run.pk for run in claimed} == {reports[0].pk, plain.pk}


def test_a_rate_never_begins_more_than_it_allows_in_any_window(process: WorkerProcess) -> None:
    limit(name="noop", job="tests.noop", rate=3, period=timedelta(minutes=1))
    for _ in range(8):
        start(registry.get("tests.noop"))
    t0 = timezone.now()
    assert len(take(process, t0)) == 3
    assert take(process, t0 + timedelta(seconds=30)) == []
    assert take(process, t0 + timedelta(seconds=59)) == []
    assert len(take(process, t0 + timedelta(seconds=60))) == 3, "the first begins left it"
    assert len(take(process, t0 + timedelta(seconds=119))) == 0
    assert len(take(process, t0 + timedelta(seconds=120))) == 2
    # Begins are kept a minute past their window (a claim's now may be a little behind).
    assert FlowBegin.objects.count() == 5, "t0's begins are a period and a minute old"
    start(registry.get("tests.noop"))
    assert len(take(process, t0 + timedelta(minutes=4))) == 1
    assert list(FlowBegin.objects.values_list("at", flat=True)) == [t0 + timedelta(minutes=4)]


def test_an_edited_limit_is_obeyed_at_the_next_claim(process: WorkerProcess) -> None:
    row = limit(name="noop", job="tests.noop", concurrency=1)
    for _ in range(4):
        start(registry.get("tests.noop"))
    assert len(take(process)) == 1
    row.concurrency = 3
    row.save()
    assert len(take(process)) == 2
    row.delete()
    assert len(take(process)) == 1, "no limit left: the plain claim again"


def test_two_claims_at_once_never_both_take_the_last_place(process: WorkerProcess) -> None:
    limit(name="noop", job="tests.noop", concurrency=1)
    for _ in range(4):
        start(registry.get("tests.noop"))

    def one() -> int:
        try:
            return len(take(process))
        finally:
            connection.close()

    assert sorted(together(one, one)) == [0, 1]
    assert Run.objects.filter(status=RunStatus.RUNNING).count() == 1


def test_a_jobs_limits_in_code_become_rows_once_and_edits_stay(rehearsal: Rehearsal) -> None:
    """A worker writes a job's limits in code when it has the job, once: a row edited
    since is never written again."""
    declared = job("tests.limits.declared", concurrency_key=tenant_of, limits=DECLARED)(
        lambda ctx, *, tenant: tenant
    )
    try:
        rehearsal.advance(timedelta(0))
        rows = {row.name: row for row in FlowLimit.objects.all()}
        assert set(rows) == {"tests.limits.declared", "partner-api"}
        named = rows["tests.limits.declared"]
        assert (named.job, named.concurrency, named.per_key) == (declared.name, 2, True)
        assert (rows["partner-api"].rate, rows["partner-api"].period) == (
            50,
            timedelta(seconds=1),
        )
        FlowLimit.objects.filter(name="partner-api").update(rate=5)
        write_defaults([declared], timezone.now())
        assert FlowLimit.objects.get(name="partner-api").rate == 5, "the edit stays"
    finally:
        registry.unregister(declared.name)


def test_a_limit_per_key_needs_a_key_and_names_differ() -> None:
    with pytest.raises(ValueError, match="a limit per key needs a concurrency_key"):
        job("tests.limits.unkeyed", limits=[Limit(concurrency=1, per_key=True)])(lambda ctx: 1)
    with pytest.raises(ValueError, match="two limits named alike"):
        job("tests.limits.twice", limits=[Limit(concurrency=1), Limit(rate=1, per=timedelta(1))])(
            lambda ctx: 1
        )
    with pytest.raises(ValueError, match="a rate needs its period"):
        Limit(rate=5)
    assert "tests.limits.unkeyed" not in registry


def test_a_full_rate_tells_the_worker_its_next_slot(process: WorkerProcess) -> None:
    limit(name="noop", job="tests.noop", rate=2, period=timedelta(seconds=10))
    for _ in range(3):
        start(registry.get("tests.noop"))
    t0 = timezone.now()
    told: list[datetime] = []
    claimed = claim(
        deployed_pairs(registry), limit=10, worker=process, now=t0, queues=None, held=told.append
    )
    assert (len(claimed), told) == (2, [t0 + timedelta(seconds=10)])


def test_runs_over_a_rate_run_as_its_window_allows_on_the_driven_clock(
    rehearsal: Rehearsal,
) -> None:
    limit(name="noop", job="tests.noop", rate=2, period=timedelta(seconds=10))
    runs = [start(registry.get("tests.noop")) for _ in range(5)]
    done = Run.objects.filter(pk__in=[run.pk for run in runs], status=RunStatus.DONE)
    rehearsal.advance(timedelta(0))
    assert done.count() == 2
    rehearsal.advance(timedelta(seconds=9))
    assert done.count() == 2, "no slot before the window moved on"
    rehearsal.advance(timedelta(seconds=1))
    assert done.count() == 4
    rehearsal.advance(timedelta(seconds=10))
    assert done.count() == 5
    assert not Run.objects.filter(status=RunStatus.FAILED).exists()


@pytest.mark.parametrize("per_key", [False, True])
def test_a_limits_counts_walk_an_index_however_many_runs_are_queued(per_key: bool) -> None:
    """The running runs and the window's begins a claim counts are read through their
    indexes (``weft_run_running``, ``weft_begin_window``), never the queued backlog."""
    row = limit(
        name="sync",
        job="tests.limits.sync",
        per_key=per_key,
        concurrency=5,
        rate=10,
        period=timedelta(seconds=1),
    )
    queries = {
        "weft_run_running": running_sql(row, binding=4),
        "weft_begin_window": begins_sql(row, timezone.now(), binding=4),
    }
    explain = "EXPLAIN " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN "
    for index, (statement, params) in queries.items():
        with transaction.atomic(), connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(explain + statement, params)
            explained = "\n".join(" ".join(map(str, row)) for row in cursor.fetchall())
        assert index in explained, explained


def test_a_worker_knows_when_its_claims_fall_under_limits(process: WorkerProcess) -> None:
    """Claims under limits that concern them are made in batches by the loop (each takes
    a turn on the limits' locks); a limit on jobs the worker does not run leaves its run
    threads claiming."""
    noop = registry.get("tests.noop")

    def take_noop() -> None:
        claim(deployed_pairs([noop]), limit=1, worker=process, now=timezone.now(), queues=None)

    take_noop()
    assert not under_limits(), "no limit"
    row = limit(name="other", job="tests.limits.sync", concurrency=1)
    take_noop()
    assert not under_limits(), "a limit, but on a job this worker does not run"
    row.job = ""
    row.queue = "default"
    row.save()
    take_noop()
    assert under_limits()
    row.delete()
    take_noop()
    assert not under_limits()


def test_a_claim_reads_only_the_keys_it_could_fill(process: WorkerProcess) -> None:
    """A claim of n runs counts only the keys with more than (limit - n) in use: the
    others have room for the whole claim, so it never takes a key past its limit, and
    its cost does not grow with the keys that have room."""
    row = limit(name="sync", job="tests.limits.sync", concurrency=5, per_key=True)
    sync = registry.get("tests.limits.sync")
    for tenant in "ab":
        for number in range(8):
            start(sync, {"tenant": tenant, "number": number})
    while take(process, limit=2):
        pass
    running = Run.objects.filter(status=RunStatus.RUNNING)
    assert sorted(running.values_list("args__tenant", flat=True)) == ["a"] * 5 + ["b"] * 5
    Run.objects.filter(
        pk__in=list(running.filter(args__tenant="b").values_list("pk", flat=True)[:2])
    ).update(status=RunStatus.DONE)
    now = timezone.now()
    every = Budget.counted([row], now)
    assert (every.running(row, "a"), every.running(row, "b")) == (5, 3)
    claimed = Budget.counted([row], now, binding=2)
    assert (claimed.running(row, "a"), claimed.running(row, "b")) == (5, 0), "b has room for 2"
    assert [run.args["tenant"] for run in take(process, limit=2)] == ["b", "b"]
    assert take(process, limit=2) == []

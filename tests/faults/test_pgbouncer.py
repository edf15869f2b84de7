"""Workers behind PgBouncer in transaction pooling, LISTENing on a direct connection.

Two real ``runjobs`` processes whose ``default`` database goes through PgBouncer
(:mod:`tests.faults.pgbouncer`) with ``WEFT_LISTEN_DATABASE`` and
``WEFT_LIVENESS_DATABASE`` on alias ``direct``, which reaches the cluster itself. Their
poll interval is an hour: once they are idle, only a NOTIFY heard on the direct
connection can make them claim a run or fire a schedule, so every batch that gets done
shows a wake-up that arrived (a listener on the pooled connection hears none, and the
batch would wait for the hour). Claims and finishes go through PgBouncer, which counts
them; nothing may be lost, doubled or declared dead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from django_weft.jobs.registry import registry
from django_weft.models import Attempt, Document, Run, Schedule, WorkerProcess
from django_weft.operations import start
from tests.faults.conftest import database_name, lock_holder
from tests.faults.pgbouncer import PgBouncer
from tests.faults.servers import PostgresCluster
from tests.patience import EVENTUALLY
from tests.processes import Runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

#: Longer than any test here: a worker that claims did so because it was woken.
NO_POLLING = "3600"
LISTENING = "listening for wake-ups on database 'direct'"


def pooled_env(pgbouncer: PgBouncer, postgres: PostgresCluster, **extra: str) -> dict[str, str]:
    """A worker on PgBouncer with its LISTEN and liveness connections direct."""
    return {
        "WEFT_TEST_PG_PORT": str(pgbouncer.port),
        "WEFT_TEST_PG_DIRECT_PORT": str(postgres.port),
        "WEFT_TEST_LISTEN_DATABASE": "direct",
        "WEFT_TEST_LIVENESS_DATABASE": "direct",
        "WEFT_TEST_POLL_INTERVAL": NO_POLLING,
        **extra,
    }


def finishes(run_id: object) -> dict[str, Any]:
    """What the finish hook of a tests.watched_sleep run recorded."""
    document = Document.objects.filter(key=f"tests:finishes:{run_id}").first()
    return document.data if document is not None else {"count": 0, "kinds": []}


def idle(workers: list[Runjobs]) -> bool:
    """Whether no run is unfinished and every worker has listened."""
    return not Run.objects.unfinished().exists() and all(w.printed(LISTENING) for w in workers)


def test_pgbouncer_wakeups_arrive_on_the_direct_connection(
    postgres: PostgresCluster, pgbouncer: PgBouncer, start_runjobs: Callable[..., Runjobs]
) -> None:
    """Idle workers polling once an hour claim every batch of runs started later and fire
    a schedule added later, through PgBouncer: each run done once with its finish hook
    once, no worker declared dead, each holding its liveness lock on the direct alias."""
    job = registry.get("tests.watched_sleep")
    env = pooled_env(pgbouncer, postgres)
    workers = [start_runjobs("--concurrency", "4", extra_env=env) for _ in range(2)]
    wait_for(lambda: idle(workers), timeout=EVENTUALLY, what="both workers to listen")
    through_pool = pgbouncer.transactions(database_name())

    runs: list[Run] = []
    for _ in range(3):
        batch = [start(job, {"seconds": 0.05}) for _ in range(15)]
        runs += batch
        wait_for(
            lambda batch=batch: (
                Run.objects.filter(pk__in=[r.pk for r in batch], status="done").count()
                == len(batch)
            ),
            timeout=EVENTUALLY,
            what="a woken worker to claim and finish the batch",
        )
    schedule = Schedule.objects.create(name="once, now", job="tests.noop", at=timezone.now())
    wait_for(
        lambda: Run.objects.filter(schedule=schedule, status="done").exists(),
        timeout=EVENTUALLY,
        what="a woken worker to fire the schedule added meanwhile",
    )

    for worker in workers:
        assert worker.poll() is None, worker.output()
    assert all(finishes(run.pk) == {"count": 1, "kinds": ["done"]} for run in runs)
    assert {run.attempt for run in Run.objects.filter(pk__in=[run.pk for run in runs])} == {1}
    assert not Attempt.objects.filter(run__in=[run.pk for run in runs]).exists(), "no retry"
    assert not Run.objects.filter(status__in=["failed", "lost"]).exists()
    assert Run.objects.filter(schedule=schedule).count() == 1
    # Every claim and finish is at least one transaction through the pool.
    assert pgbouncer.transactions(database_name()) - through_pool >= 2 * len(runs)
    alive = WorkerProcess.objects.filter(stopped_at__isnull=True)
    assert alive.count() == 2, "no live worker declared dead"
    assert all(lock_holder(postgres, process.pk) is not None for process in alive)
    for worker in workers:
        output = worker.stop()
        assert worker.returncode == 0, output
        assert "database error" not in output, output


def test_pgbouncer_listen_database_of_another_database_is_refused(
    postgres: PostgresCluster, pgbouncer: PgBouncer, start_runjobs: Callable[..., Runjobs]
) -> None:
    """A WEFT_LISTEN_DATABASE that reaches another database is named in an error, not
    listened on; the worker goes on by polling and gets its runs done."""
    env = pooled_env(
        pgbouncer,
        postgres,
        WEFT_TEST_PG_DIRECT_NAME="postgres",
        WEFT_TEST_POLL_INTERVAL="1",
    )
    worker = start_runjobs(extra_env=env)
    refused = (
        f"WEFT_LISTEN_DATABASE = 'direct' reaches database 'postgres' of cluster "
        f"{postgres.query('SELECT system_identifier::text FROM pg_control_system()')[0][0]}, "
        f"not the workers' database '{database_name()}'"
    )
    wait_for(lambda: worker.printed(refused), timeout=EVENTUALLY, what="the refusal")
    run = start(registry.get("tests.noop"), {})
    wait_for(
        lambda: Run.objects.get(pk=run.pk).status == "done",
        timeout=EVENTUALLY,
        what="the run, found by polling",
    )
    assert not worker.printed(LISTENING), worker.output()
    output = worker.stop()
    assert worker.returncode == 0, output

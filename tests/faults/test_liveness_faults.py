"""Liveness that only death ends, fenced claims, and finishes through database errors.

On the throwaway cluster: a worker starved of connection slots, or whose runs' rows
another transaction holds locked, is never declared dead, and nothing it runs is lost;
the liveness lock is the rule (held: alive; gone, with the heartbeat silent: dead), is
taken again after a restart, and a restart's dropped locks are not believed until the
server has been up for the lost-after window; a claim or a beat that races a reap, on
real connections, never leaves a stopped worker claiming; a full disk (a real one: a
tmpfs under the documents table) refusing a finish hook's write is an outage, and the
hook commits once with the real outcome.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection, connections, transaction
from django.test import override_settings
from django.utils import timezone

from django_weft.conf import weft_settings
from django_weft.engine.database.keepalives import keepalive_settings
from django_weft.engine.database.notify import CHANNEL
from django_weft.engine.outcomes.finishing import AttemptReport
from django_weft.engine.runs.claiming import claim, deployed_pairs
from django_weft.engine.worker.execution import Execution, report_of
from django_weft.engine.worker.liveness import key_sql, lock_key
from django_weft.engine.worker.loop import Worker
from django_weft.engine.worker.reaping import mark_dead
from django_weft.engine.worker.reports import Reports
from django_weft.jobs.connections import limit_session
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.models import Document, Run, RunStatus, WorkerProcess
from django_weft.operations import start
from tests.faults.conftest import FAST_HEARTBEAT, database_name, lock_holder
from tests.faults.full_disk import FullDisk, full_disk
from tests.faults.servers import PostgresCluster
from tests.faults.test_worker_faults import finishes, reachable
from tests.jobs import open_gate
from tests.processes import Runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

LOST_AFTER = float(FAST_HEARTBEAT["WEFT_TEST_LOST_AFTER"])
HEARTBEAT = float(FAST_HEARTBEAT["WEFT_TEST_HEARTBEAT_INTERVAL"])
INLINE = "django_weft.engine.worker.executors.InlineExecutor"
#: Events on a busy machine may take a while: every wait here allows this long.
PATIENCE = 120.0


def uptime(postgres: PostgresCluster) -> float:
    ((seconds,),) = postgres.query("SELECT extract(epoch FROM now() - pg_postmaster_start_time())")
    return float(seconds)  # type: ignore[arg-type]


def row_of(process: Runjobs) -> WorkerProcess:
    return WorkerProcess.objects.get(pid=process.pid, stopped_at__isnull=True)


def waiting_for_a_lock(postgres: PostgresCluster) -> bool:
    rows = postgres.query(
        "SELECT count(*) FROM pg_locks WHERE NOT granted", database=database_name()
    )
    return bool(rows[0][0])


def in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """``work`` on a thread (and a Django connection) of its own; its answer lands in the dict."""
    answer: dict[str, Any] = {}

    def run() -> None:
        try:
            answer["value"] = work()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, answer


def blocked_in_thread(
    postgres: PostgresCluster, work: Callable[[], Any], what: str
) -> tuple[threading.Thread, dict[str, Any]]:
    """``work`` started as :func:`in_thread` does, once it waits for a lock someone holds."""
    thread, answer = in_thread(work)
    wait_for(lambda: waiting_for_a_lock(postgres), PATIENCE, what)
    return thread, answer


def worker_row(last_beat: datetime) -> WorkerProcess:
    """A worker's row, started and last beating at ``last_beat``, with no process behind it."""
    return WorkerProcess.objects.create(
        hostname="h", pid=1, started_at=last_beat, last_beat=last_beat
    )


# -- the rule, in this process ------------------------------------------------------------------


def test_the_liveness_lock_is_the_rule_and_is_taken_again_after_a_restart(
    postgres: PostgresCluster,
) -> None:
    """A silent worker holding its lock is not marked dead; once its lock is gone it is.
    After a restart the lock is taken again, and until the server has been up for the
    lost-after window no lockless worker is marked."""
    with override_settings(WEFT_HEARTBEAT_INTERVAL=0.5, WEFT_LOST_AFTER=1.5):
        worker = Worker(executor=INLINE, schedules=False)
        process = worker.start()
        try:
            wait_for(lambda: lock_holder(postgres, process.pk) is not None, PATIENCE, "the lock")
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT {key_sql('CAST(%s AS uuid)')}", [str(process.pk)])
                assert cursor.fetchone()[0] == lock_key(process.pk), "SQL and Python agree"
            wait_for(lambda: uptime(postgres) > 1.5, PATIENCE, "the server's first seconds")
            later = timezone.now() + timedelta(hours=1)
            assert mark_dead(now=later, silent_since=later) == 0, "silent but holding its lock"

            postgres.restart("fast")
            wait_for(reachable, PATIENCE, "this process to reach the database again")
            wait_for(lambda: lock_holder(postgres, process.pk) is not None, PATIENCE, "relock")
            worker.membership.let_go()
            wait_for(lambda: lock_holder(postgres, process.pk) is None, PATIENCE, "let go")
            with override_settings(WEFT_LOST_AFTER=3600):
                assert mark_dead(now=later, silent_since=later) == 0, "the server just started"
            wait_for(lambda: uptime(postgres) > 1.5, PATIENCE, "the restart's grace")
            assert mark_dead(now=later, silent_since=later) == 1
            assert WorkerProcess.objects.get(pk=process.pk).stopped_at == later
        finally:
            worker.close()


def test_the_worker_loop_has_its_statement_and_lock_timeouts(postgres: PostgresCluster) -> None:
    """The loop thread's session gets WEFT_STATEMENT_TIMEOUT and WEFT_LOCK_TIMEOUT, and
    so does the session it opens after losing one; None keeps the server's setting."""

    def shown() -> tuple[str, str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('statement_timeout'), current_setting('lock_timeout')"
            )
            row = cursor.fetchone()
        return (row[0], row[1])

    with override_settings(WEFT_STATEMENT_TIMEOUT=12.5, WEFT_LOCK_TIMEOUT=0.25):
        worker = Worker(executor=INLINE, schedules=False)
        worker.start()
        try:
            assert shown() == ("12500ms", "250ms")
            connection.close()
            assert shown() == ("12500ms", "250ms"), "a new session of the loop's thread"
        finally:
            worker.close()
    connection.close()
    with override_settings(WEFT_STATEMENT_TIMEOUT=None, WEFT_LOCK_TIMEOUT=None):
        worker = Worker(executor=INLINE, schedules=False)
        worker.start()
        try:
            assert shown() == ("0", "0")
        finally:
            worker.close()


def keepalive_timers(local_port: int, remote_port: int) -> list[float]:
    """Seconds left on the keepalive timer of each TCP socket from ``local_port`` to
    ``remote_port`` on this host, as ``ss`` shows them (``timer:(keepalive,14sec,0)``)."""
    shown = subprocess.run(
        [
            "ss",
            "-tnoH",
            "state",
            "established",
            f"( sport = :{local_port} and dport = :{remote_port} )",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    units = {"min": 60.0, "sec": 1.0, "ms": 0.001}
    return [
        sum(
            float(amount) * units[unit]
            for amount, unit in re.findall(r"([\d.]+)(min|sec|ms)", left)
        )
        for left in re.findall(r"timer:\(keepalive,([^,]+),", shown)
    ]


def test_the_liveness_and_listen_sessions_have_the_same_keepalives(
    postgres: PostgresCluster,
) -> None:
    """The liveness lock's and the listener's sessions probe a silent peer after half of
    WEFT_LOST_AFTER, at both ends (the server's socket and libpq's), not after the
    system's two hours: a vanished server or a cut network ends either in a reconnect."""
    idle = float(dict(keepalive_settings(weft_settings.LOST_AFTER))["tcp_keepalives_idle"])
    worker = Worker(executor=INLINE, schedules=False)
    process = worker.start()
    try:
        wait_for(lambda: lock_holder(postgres, process.pk) is not None, PATIENCE, "the lock")
        database = database_name()

        def client_port(condition: str, *params: object) -> int | None:
            rows = postgres.query(
                f"SELECT client_port FROM pg_stat_activity WHERE datname = %s AND {condition}",
                (database, *params),
            )
            return int(rows[0][0]) if rows else None  # type: ignore[call-overload]

        wait_for(
            lambda: client_port("query = %s", f"LISTEN {CHANNEL}") is not None,
            PATIENCE,
            "the listener",
        )
        sessions = {
            "liveness": client_port("pid = %s", lock_holder(postgres, process.pk)),
            "listen": client_port("query = %s", f"LISTEN {CHANNEL}"),
        }
        for name, port in sessions.items():
            assert port is not None, name
            # A session sets its keepalives with its first statements: wait for both ends.
            wait_for(
                lambda port=port: (
                    len(keepalive_timers(postgres.port, port))
                    == len(keepalive_timers(port, postgres.port))
                    == 1
                ),
                PATIENCE,
                f"the {name} session's keepalive timers at both ends",
            )
            server = keepalive_timers(postgres.port, port)
            client = keepalive_timers(port, postgres.port)
            assert server[0] <= idle, (name, "server", server, idle)
            assert client[0] <= idle, (name, "client", client, idle)
    finally:
        worker.close()


# -- a locked row delays only its own run --------------------------------------------------------


def claimed(job_name: str, worker: WorkerProcess) -> tuple[Execution, AttemptReport]:
    """A run of ``job_name`` started and claimed by ``worker``, and the report that it is done."""
    job = registry.get(job_name)
    start(job, {"seconds": 0} if job_name == "tests.watched_sleep" else None)
    (run,) = claim(deployed_pairs([job]), limit=1, worker=worker, now=timezone.now(), queues=None)
    execution = Execution(run=run, worker_id=worker.pk)
    return execution, report_of(execution, RunStatus.DONE)


@contextmanager
def rows_locked(
    postgres: PostgresCluster, table: str, where: str, params: tuple[object, ...]
) -> Iterator[list[tuple[Any, ...]]]:
    """The ids of ``table``'s rows matching ``where``, held ``FOR UPDATE`` by another
    client's transaction until the block ends, however it ends."""
    locker = psycopg.connect(
        host="127.0.0.1", port=postgres.port, user=postgres.user, dbname=database_name()
    )
    try:
        yield locker.execute(f"SELECT id FROM {table} WHERE {where} FOR UPDATE", params).fetchall()
    finally:
        locker.commit()
        locker.close()


def test_a_run_row_locked_elsewhere_holds_back_its_report_without_waiting(
    postgres: PostgresCluster,
) -> None:
    """With no lock timeout at all, recording does not wait for a run row another
    transaction holds: that report is held back, the others are recorded, and it is
    recorded once the row is free."""
    worker = worker_row(timezone.now())
    (locked, locked_report), (free, free_report) = (
        claimed("tests.noop", worker),
        claimed("tests.noop", worker),
    )
    reports = Reports()
    reports.deliver(locked, locked_report)
    reports.deliver(free, free_report)
    with rows_locked(postgres, Run._meta.db_table, "id = %s", (locked.run.pk,)):
        thread, answer = in_thread(lambda: reports.record(timezone.now(), Changes()))
        thread.join(PATIENCE)
        assert not thread.is_alive(), "recording waited for the locked row"
        assert answer["value"].done == [free]
        assert Run.objects.get(pk=free.run.pk).status == RunStatus.DONE
        assert Run.objects.get(pk=locked.run.pk).status == RunStatus.RUNNING
        assert (len(reports), reports.ready()) == (1, False)
    assert reports.record(timezone.now(), Changes()) is not None
    assert Run.objects.get(pk=locked.run.pk).status == RunStatus.DONE
    assert (len(reports), reports.ready()) == (0, False)


def test_a_finish_hook_waiting_past_the_lock_timeout_delays_only_its_run(
    postgres: PostgresCluster,
) -> None:
    """A hook whose document row is locked elsewhere gives up after WEFT_LOCK_TIMEOUT:
    its finish is rolled back and held back, the round's other reports are recorded, and
    once the row is free the hook commits once."""
    worker = worker_row(timezone.now())
    hooked, hooked_report = claimed("tests.watched_sleep", worker)
    plain, plain_report = claimed("tests.noop", worker)
    key = f"tests:finishes:{hooked.run.pk}"
    Document.objects.create(key=key, schema="tests.finishes", data={"count": 0, "kinds": []})
    reports = Reports()
    reports.deliver(hooked, hooked_report)
    reports.deliver(plain, plain_report)
    with rows_locked(postgres, Document._meta.db_table, "key = %s", (key,)):
        with override_settings(WEFT_LOCK_TIMEOUT=0.2), connection.cursor() as cursor:
            limit_session(cursor)
        recorded = reports.record(timezone.now(), Changes())
        assert recorded is not None
        assert recorded.done == [plain]
        assert Run.objects.get(pk=plain.run.pk).status == RunStatus.DONE
        assert Run.objects.get(pk=hooked.run.pk).status == RunStatus.RUNNING
        assert (len(reports), reports.ready()) == (1, False)
    assert reports.record(timezone.now(), Changes()) is not None
    assert Run.objects.get(pk=hooked.run.pk).status == RunStatus.DONE
    assert finishes(hooked.run.pk) == {"count": 1, "kinds": ["done"]}
    connection.close()  # the session's lock timeout goes with it


# -- the reaping race, on real connections ------------------------------------------------------


@pytest.fixture
def reapable(postgres: PostgresCluster) -> Iterator[None]:
    """A lost-after window short enough that the throwaway server is past its grace."""
    with override_settings(WEFT_LOST_AFTER=1.5):
        wait_for(lambda: uptime(postgres) > 1.5, PATIENCE, "the server's first seconds")
        yield


def reap(now: datetime) -> int:
    """Mark dead, at ``now``, the workers silent for the last 30 seconds; how many."""
    return mark_dead(now=now, silent_since=now - timedelta(seconds=30))


def test_a_claim_during_a_reap_waits_for_it_and_claims_nothing(
    postgres: PostgresCluster, reapable: None
) -> None:
    """The reap marks a silent worker stopped; that worker's claim, sent before the reap
    commits, waits for the worker row and then takes no run."""
    now = timezone.now()
    job = registry.get("tests.noop")
    run = start(job)
    silent = worker_row(now - timedelta(hours=1))
    deployed = deployed_pairs([job])
    with transaction.atomic():
        assert reap(now) == 1
        thread, answer = blocked_in_thread(
            postgres,
            lambda: claim(deployed, limit=5, worker=silent, now=now, queues=None),
            "the claim to wait",
        )
    thread.join(PATIENCE)
    assert answer["value"] == []
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


def test_a_reap_during_a_claim_waits_and_then_counts_the_claimed_runs_lost(
    postgres: PostgresCluster, reapable: None
) -> None:
    """A claim in progress holds its worker's row: the reap waits for it, marks the
    worker, and the run of that claim is among those it then finishes lost."""
    now = timezone.now()
    job = registry.get("tests.noop")
    run = start(job)
    silent = worker_row(now - timedelta(hours=1))
    with transaction.atomic():
        (claimed,) = claim(deployed_pairs([job]), limit=5, worker=silent, now=now, queues=None)
        thread, answer = blocked_in_thread(postgres, lambda: reap(now), "the reap to wait")
    thread.join(PATIENCE)
    assert (claimed.pk, answer["value"]) == (run.pk, 1)
    assert Run.objects.get(pk=run.pk).worker_id == silent.pk
    assert WorkerProcess.objects.get(pk=silent.pk).stopped_at == now


def test_a_beat_during_a_reap_wins(postgres: PostgresCluster, reapable: None) -> None:
    """A beat that lands while the reap is under way: the reap's statement waits for the
    row and, reading it again, sees the beat and marks nothing."""
    now = timezone.now()
    beating = worker_row(now - timedelta(hours=1))
    with transaction.atomic():
        assert WorkerProcess.objects.filter(pk=beating.pk, stopped_at__isnull=True).update(
            last_beat=now
        )
        thread, answer = blocked_in_thread(postgres, lambda: reap(now), "the reap to wait")
    thread.join(PATIENCE)
    assert answer["value"] == 0
    assert WorkerProcess.objects.get(pk=beating.pk).stopped_at is None


# -- real workers ---------------------------------------------------------------------------


#: The login role of the worker a test starves of connections.
STARVED = "weft_starved"
#: Its connections other than its liveness lock's, as a condition on pg_stat_activity.
STARVED_OTHERS = f"usename = '{STARVED}' AND pid <> %s"


@pytest.fixture
def starved_role() -> Iterator[str]:
    """A login role with the test database's tables, and not a superuser: the server
    holds it to its connection limit, which the test lowers to starve the worker that
    connects as it (a limit of the whole server would starve the reaper beside it too,
    and any connection the reaper ends gives a slot back). Dropped after the test."""
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {STARVED} LOGIN")
        cursor.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {STARVED}")
        cursor.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {STARVED}")
    try:
        yield STARVED
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity WHERE usename = %s",
                [STARVED],
            )
            cursor.execute(f"DROP OWNED BY {STARVED}")
            cursor.execute(f"DROP ROLE {STARVED}")


def end_starved_others(holder: int) -> list[tuple[Any, ...]]:
    """Ends the starved worker's connections other than its lock's; those still there."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity WHERE {STARVED_OTHERS}",
            [holder],
        )
    return starved_others(holder)


def starved_others(holder: int) -> list[tuple[Any, ...]]:
    """The starved worker's connections other than its lock's ``holder``."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT pid, backend_start, state, left(query, 80) FROM pg_stat_activity "
            f"WHERE {STARVED_OTHERS}",
            [holder],
        )
        return cursor.fetchall()


def test_a_worker_starved_of_connection_slots_is_not_declared_dead(
    postgres: PostgresCluster, starved_role: str, start_runjobs: Callable[..., Runjobs]
) -> None:
    """The worker's connections are ended and every new one is refused (its role's
    connection limit is reached, as when the server's slots are gone) but its liveness
    lock's: its heartbeat is silent past the lost-after window while a reaper keeps
    beating, yet its lock keeps it alive; once it may connect again its runs end done,
    once each."""
    reaper = start_runjobs(
        "--no-schedules", "--queue", "elsewhere", extra_env={"PGAPPNAME": "weft-reaper"}
    )
    wait_for(lambda: WorkerProcess.objects.filter(pid=reaper.pid).exists(), PATIENCE, "reaper")
    reaper_row = row_of(reaper)
    # The reaper reaps only once it has reached the database for a window of its own.
    window = timedelta(seconds=LOST_AFTER + 2 * HEARTBEAT)
    wait_for(
        lambda: (
            WorkerProcess.objects.get(pk=reaper_row.pk).last_beat > reaper_row.started_at + window
        ),
        PATIENCE,
        "the reaper's own lost-after window",
    )
    job = registry.get("tests.watched_sleep")
    runs = [start(job, {"seconds": 10}) for _ in range(2)]
    starved = start_runjobs(
        "--no-schedules",
        "--concurrency",
        "2",
        extra_env={"PGAPPNAME": "weft-starved", "WEFT_TEST_PG_USER": starved_role},
    )
    ids = [run.pk for run in runs]
    wait_for(
        lambda: Run.objects.filter(pk__in=ids, status="running").count() == 2,
        PATIENCE,
        "the starved worker's claims",
    )
    starved_row = row_of(starved)
    wait_for(lambda: lock_holder(postgres, starved_row.pk) is not None, PATIENCE, "its lock")
    holder = lock_holder(postgres, starved_row.pk)

    assert holder is not None
    with connection.cursor() as cursor:
        # No new connection of its role but the one its lock holds.
        cursor.execute(f"ALTER ROLE {starved_role} CONNECTION LIMIT 1")
    wait_for(lambda: not end_starved_others(holder), PATIENCE, "its other connections to end")
    silenced = WorkerProcess.objects.get(pk=starved_row.pk).last_beat
    try:
        wait_for(
            lambda: WorkerProcess.objects.get(pk=reaper_row.pk).last_beat > silenced + window,
            PATIENCE,
            "the reaper to beat (and reap) past the starved worker's window",
        )
        starving = WorkerProcess.objects.get(pk=starved_row.pk)
        assert starving.last_beat == silenced, (
            f"its heartbeat was silent all along; its connections: {starved_others(holder)}"
        )
        assert starving.stopped_at is None, "not declared dead"
        assert not Run.objects.filter(pk__in=ids).exclude(status="running").exists()
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER ROLE {starved_role} CONNECTION LIMIT -1")

    wait_for(
        lambda: Run.objects.filter(pk__in=ids, status="done").count() == 2,
        PATIENCE,
        "the starved worker's runs to end",
    )
    assert all(finishes(run_id) == {"count": 1, "kinds": ["done"]} for run_id in ids)
    assert starved.printed("database error in the"), starved.output()
    assert not starved.printed("was declared dead"), starved.output()
    assert WorkerProcess.objects.get(pk=starved_row.pk).stopped_at is None
    assert starved.poll() is None
    assert reaper.poll() is None


def test_row_locks_on_running_runs_hold_back_only_those_runs(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs]
) -> None:
    """Another transaction holds FOR UPDATE on three running runs past the lost-after
    window: both workers keep beating and claiming, queued runs are done meanwhile, and
    nobody is declared dead; once it commits the three outcomes are recorded once."""
    held = [start(registry.get("tests.watched_gate")) for _ in range(3)]
    held_ids = [run.pk for run in held]
    job = registry.get("tests.watched_sleep")
    workers = [start_runjobs("--no-schedules", "--concurrency", "4") for _ in range(2)]
    wait_for(
        lambda: Run.objects.filter(pk__in=held_ids, status="running").count() == 3,
        PATIENCE,
        "the three claims",
    )
    running = "id = ANY(%s) AND status = 'running'"
    with rows_locked(postgres, Run._meta.db_table, running, (held_ids,)) as locked:
        assert len(locked) == 3, "locked while running (until their gates open)"
        locked_at = timezone.now()
        for run_id in held_ids:
            open_gate(run_id)  # they end now, and their outcomes wait for the lock
        queued = [start(job, {"seconds": 0}) for _ in range(6)]
        queued_ids = [run.pk for run in queued]
        wait_for(
            lambda: Run.objects.filter(pk__in=queued_ids, status="done").count() == 6,
            PATIENCE,
            "the unlocked runs to be claimed and done",
        )
        window = locked_at + timedelta(seconds=LOST_AFTER + 2 * HEARTBEAT)
        wait_for(
            lambda: WorkerProcess.objects.filter(last_beat__gt=window).count() == 2,
            PATIENCE,
            "both workers to beat past the lost-after window",
        )
        wait_for(
            lambda: all(
                any(worker.printed(f"run {run_id} (done) waits") for worker in workers)
                for run_id in held_ids
            ),
            PATIENCE,
            "the three outcomes to be held back",
        )
        assert Run.objects.filter(pk__in=held_ids, status="running").count() == 3
        assert not WorkerProcess.objects.filter(stopped_at__isnull=False).exists()
        assert not Run.objects.filter(status="lost").exists()
    wait_for(
        lambda: Run.objects.filter(pk__in=held_ids, status="done").count() == 3,
        PATIENCE,
        "the held-back outcomes",
    )
    for run_id in [*held_ids, *queued_ids]:
        assert finishes(run_id) == {"count": 1, "kinds": ["done"]}
    for worker in workers:
        assert not worker.printed("was declared dead"), worker.output()
        assert worker.poll() is None


@pytest.fixture
def documents_disk(postgres: PostgresCluster) -> Iterator[FullDisk]:
    """The documents table (where finish hooks write) alone on a small tmpfs, emptied."""
    with full_disk(postgres, database_name(), Document._meta.db_table) as disk:
        yield disk


def disk_full_errors(postgres: PostgresCluster) -> int:
    """How many times the server has refused a write for want of space, by its log."""
    return postgres.log.read_text(errors="replace").count("No space left on device")


def test_disk_full_inside_a_finish_hook_is_an_outage_and_the_hook_commits_once(
    postgres: PostgresCluster, documents_disk: FullDisk, start_runjobs: Callable[..., Runjobs]
) -> None:
    """The disk under the documents table is full (a filler file took the last byte of
    its tmpfs): the server refuses the hook's document write, "could not extend file ...:
    No space left on device". The finish is rolled back and retried while the disk stays
    full, never recorded as the hook's failure, and the worker is never declared dead;
    once the filler is deleted the run is done, once, and its hook committed once."""
    assert documents_disk.fill() > 0
    refused_before = disk_full_errors(postgres)
    run = start(registry.get("tests.watched_sleep"), {"seconds": 0})
    worker = start_runjobs("--no-schedules")
    wait_for(lambda: worker.printed("could not extend file"), PATIENCE, "the disk-full error")
    assert worker.printed("No space left on device"), worker.output()
    wait_for(
        lambda: disk_full_errors(postgres) >= refused_before + 2,
        PATIENCE,
        "the finish to be tried again on the full disk",
    )
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
    assert finishes(run.pk) == {"count": 0, "kinds": []}
    documents_disk.free()
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, PATIENCE, "the finish")
    done = Run.objects.get(pk=run.pk)
    assert (done.status, done.error_type, done.error_message) == (RunStatus.DONE, "", "")
    assert finishes(run.pk) == {"count": 1, "kinds": ["done"]}
    assert (done.attempt, done.attempts.count()) == (1, 0), "claimed once, never retried"
    assert not Run.objects.unfinished().exists()
    assert worker.printed("database error in the finish step (OperationalError: could not")
    assert not worker.printed("finish hook of"), "never taken for the hook's failure"
    assert not worker.printed("was declared dead"), worker.output()
    assert row_of(worker).stopped_at is None
    assert worker.poll() is None

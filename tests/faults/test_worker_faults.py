"""Real ``runjobs`` processes through the faults a deployment meets.

A PostgreSQL restart under two busy workers, a worker killed mid-run, a worker paused
past the lost-after window, retries and timeouts, and the API and a starting worker
while the database is down. Every run must end once, with its finish hook once; none
may stay running, be lost without cause or fire twice.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from django_weft.jobs.registry import registry
from django_weft.models import Attempt, Document, Run, RunStatus, Schedule, WorkerProcess
from django_weft.operations import start
from tests.faults.conftest import FAST_HEARTBEAT, lock_holder, reachable
from tests.faults.servers import PostgresCluster
from tests.jobs import open_gate
from tests.processes import Runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

#: Lost-after of the fast-heartbeat workers (tests.faults.conftest.FAST_HEARTBEAT).
LOST_AFTER = float(FAST_HEARTBEAT["WEFT_TEST_LOST_AFTER"])


def finishes(run_id: object) -> dict[str, Any]:
    """What the finish hook of a tests.watched_sleep / tests.flaky* run recorded."""
    document = Document.objects.filter(key=f"tests:finishes:{run_id}").first()
    return document.data if document is not None else {"count": 0, "kinds": []}


def test_postgres_restart_under_two_busy_workers(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs]
) -> None:
    """Both workers live through a fast restart and resume (they retry at least every
    BACKOFF_CAP seconds and a half: tests/engine/test_attempts.py); nothing is lost, stuck,
    finished twice or fired twice, and every finish hook runs once."""
    job = registry.get("tests.watched_sleep")
    runs = [start(job, {"seconds": 0.4}) for _ in range(40)]
    schedule = Schedule.objects.create(
        name="every second", job="tests.noop", every=timedelta(seconds=1)
    )
    workers = [start_runjobs(), start_runjobs()]
    wait_for(
        lambda: Run.objects.filter(pk__in=[r.pk for r in runs], status="done").count() >= 4,
        what="the workers to be busy",
    )

    postgres.restart("fast")
    back = timezone.now()
    wait_for(reachable, what="this process to reach the database again")

    wait_for(
        lambda: Run.objects.filter(pk__in=[r.pk for r in runs]).unfinished().count() == 0,
        timeout=90,
        what="every run to finish after the restart",
    )
    wait_for(
        lambda: Run.objects.filter(schedule=schedule, created_at__gt=back).count() >= 3,
        what="the schedule to fire again",
    )
    for worker in workers:
        assert worker.poll() is None, worker.output()
        assert worker.printed("database available again after"), worker.output()
    assert [r.status for r in Run.objects.filter(pk__in=[r.pk for r in runs])] == ["done"] * 40
    assert all(finishes(run.pk) == {"count": 1, "kinds": ["done"]} for run in runs)
    assert not Run.objects.filter(status__in=["failed", "lost"]).exists()
    assert Run.objects.filter(started_at__gt=back).exists(), "runs claimed after the restart"
    dues = list(Run.objects.filter(schedule=schedule).values_list("due", flat=True))
    assert len(dues) == len(set(dues)), "no slot fired twice"
    for worker in workers:
        output = worker.stop()
        assert worker.returncode == 0, output


def test_sigkill_mid_run_is_lost_once_and_retried_when_allowed(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """A killed worker's runs end lost exactly once, never before the window; a retried job's run
    gets its second attempt elsewhere, and its finish hook runs once, for the end."""
    plain = start(registry.get("tests.watched_sleep"), {"seconds": 600})
    retried = start(registry.get("tests.retried_when_lost"), {"seconds": 600})
    doomed = start_runjobs("--concurrency", "2")
    wait_for(
        lambda: Run.objects.filter(pk__in=[plain.pk, retried.pk], status="running").count() == 2,
        what="both runs to be claimed",
    )
    doomed.send_signal(signal.SIGKILL)
    doomed.finish()
    dead = WorkerProcess.objects.get(pk=Run.objects.get(pk=plain.pk).worker_id)
    survivor = start_runjobs()

    wait_for(lambda: Run.objects.get(pk=plain.pk).is_finished, what="the lost run")
    wait_for(lambda: Run.objects.get(pk=retried.pk).is_finished, what="the retried run")
    lost = Run.objects.get(pk=plain.pk)
    assert (lost.status, lost.error_type) == (RunStatus.LOST, "WorkerLost")
    # Never before the window; how long after it depends on how busy the machine is.
    assert lost.finished_at - dead.last_beat >= timedelta(seconds=LOST_AFTER)
    assert finishes(plain.pk) == {"count": 1, "kinds": ["lost"]}
    done = Run.objects.get(pk=retried.pk)
    assert (done.status, done.attempt, done.result) == (RunStatus.DONE, 2, 2)
    (attempt,) = Attempt.objects.filter(run=retried)
    assert (attempt.number, attempt.status, attempt.worker_id) == (1, RunStatus.LOST, dead.pk)
    assert finishes(retried.pk) == {"count": 1, "kinds": ["done"]}
    assert survivor.poll() is None


def test_sigkill_while_run_threads_take_a_backlog_ends_every_run_once(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """A worker killed while its run threads claim their next runs themselves: every run
    ends once, done, or lost on the killed worker (it was executing it, or its outcome
    was not recorded yet); none stays queued or running, none was claimed twice, and
    each finish hook ran once, for the end the run has."""
    job = registry.get("tests.watched_sleep")
    ids = [start(job, {"seconds": 0.02}).pk for _ in range(150)]
    runs = Run.objects.filter(pk__in=ids)
    doomed = start_runjobs("--concurrency", "4")
    wait_for(lambda: runs.filter(status="done").count() >= 20, what="the backlog under way")
    doomed.send_signal(signal.SIGKILL)
    doomed.finish()
    (dead,) = WorkerProcess.objects.all()
    assert runs.filter(status="queued").exists(), "killed with a backlog left"
    survivor = start_runjobs()

    wait_for(lambda: not runs.unfinished().exists(), timeout=120, what="every run to end")
    ended = list(runs.values_list("pk", "status", "attempt", "worker_id"))
    assert {attempt for _, _, attempt, _ in ended} == {1}, "no run was claimed twice"
    lost = [(pk, worker) for pk, status, _, worker in ended if status == RunStatus.LOST]
    assert {status for _, status, _, _ in ended} <= {RunStatus.DONE, RunStatus.LOST}
    assert {worker for _, worker in lost} <= {dead.pk}, "only the killed worker's runs lost"
    assert all(finishes(pk) == {"count": 1, "kinds": [str(status)]} for pk, status, _, _ in ended)
    assert survivor.poll() is None


def test_sigstop_past_lost_after_then_sigcont(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs]
) -> None:
    """A paused worker holding its liveness lock is alive however long it is silent; once
    its lock's connection is gone too its run is finished lost once by another; woken
    up, it discards its late outcome, registers again and works on."""
    # Running until the test opens its gate: still running when the pause comes, however
    # long the other worker takes to start on a busy machine.
    run = start(registry.get("tests.watched_gate"))
    paused = start_runjobs("--no-schedules")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, what="the claim")
    first = Run.objects.get(pk=run.pk).worker_id
    wait_for(lambda: lock_holder(postgres, first) is not None, what="its liveness lock")
    other = start_runjobs("--no-schedules", "--queue", "elsewhere")
    wait_for(lambda: WorkerProcess.objects.filter(pid=other.pid).exists(), what="the other")
    other_row = WorkerProcess.objects.get(pid=other.pid)

    paused.send_signal(signal.SIGSTOP)
    try:
        silenced = WorkerProcess.objects.get(pk=first).last_beat
        window = timedelta(seconds=LOST_AFTER + 1)
        wait_for(
            lambda: (
                WorkerProcess.objects.get(pk=other_row.pk).last_beat
                > max(silenced, other_row.started_at) + window
            ),
            timeout=120,
            what="the other worker to beat (and reap) past the paused one's window",
        )
        assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, "alive: its lock holds"
        assert WorkerProcess.objects.get(pk=first).stopped_at is None
        # The server drops the lock's session, as it does for a host cut off the network.
        postgres.query("SELECT pg_terminate_backend(%s, 30000)", (lock_holder(postgres, first),))
        wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="the paused worker's run")
        assert Run.objects.get(pk=run.pk).status == RunStatus.LOST
        open_gate(run.pk)  # it ends once woken: its outcome is late
    finally:
        paused.send_signal(signal.SIGCONT)

    wait_for(lambda: paused.printed("registered again as"), what="the worker to register again")
    wait_for(lambda: paused.printed("discarded"), what="the late outcome to be discarded")
    assert paused.printed("was declared dead by another")
    assert Run.objects.get(pk=run.pk).status == RunStatus.LOST
    assert finishes(run.pk) == {"count": 1, "kinds": ["lost"]}
    again = start(registry.get("tests.watched_sleep"), {"seconds": 0})
    wait_for(lambda: Run.objects.get(pk=again.pk).status == RunStatus.DONE, what="a new run")
    rerun = Run.objects.get(pk=again.pk)
    assert rerun.worker_id != first
    assert WorkerProcess.objects.get(pk=rerun.worker_id).pid == paused.pid
    assert paused.poll() is None
    assert other.poll() is None


#: Workers that beat four times a second and count 1.5 s of silence as death, for the
#: tests of stuck workers below: with the liveness lock (PostgreSQL) a paused worker is
#: never declared dead, so a short window costs nothing but wall time saved.
QUICK_HEARTBEAT = {"WEFT_TEST_HEARTBEAT_INTERVAL": "0.25", "WEFT_TEST_LOST_AFTER": "1.5"}


def test_sigstop_past_a_timeout_ends_that_run_only(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs]
) -> None:
    """A worker paused with a run past its timeout (1 s) and grace, and a run without a
    timeout: once it has missed two beats, another worker finishes the first lost
    (Timeout); the second stays running on it, and it is not declared dead however long
    it stays paused (it holds its liveness lock). Resumed, its late outcome is
    discarded, it beats on as the same worker, finishes the second run, and each finish
    hook ran once."""
    overdue = start(registry.get("tests.watched_stuck"))
    patient = start(registry.get("tests.watched_gate"))
    both = Run.objects.filter(pk__in=[overdue.pk, patient.pk])
    # Its own grace is long: only another worker can end the run while the test runs.
    paused = start_runjobs(
        "--no-schedules",
        "--concurrency",
        "2",
        extra_env={**QUICK_HEARTBEAT, "WEFT_TEST_TIMEOUT_GRACE": "600"},
    )
    wait_for(lambda: both.filter(status=RunStatus.RUNNING).count() == 2, what="both claims")
    (paused_id,) = set(both.values_list("worker_id", flat=True))
    wait_for(lambda: lock_holder(postgres, paused_id) is not None, what="its liveness lock")
    other = start_runjobs(
        "--no-schedules",
        "--queue",
        "elsewhere",
        extra_env={**QUICK_HEARTBEAT, "WEFT_TEST_TIMEOUT_GRACE": "0.5"},
    )
    wait_for(lambda: WorkerProcess.objects.filter(pid=other.pid).exists(), what="the other")
    other_row = WorkerProcess.objects.get(pid=other.pid)

    paused.send_signal(signal.SIGSTOP)
    try:
        silenced = WorkerProcess.objects.get(pk=paused_id).last_beat
        wait_for(lambda: Run.objects.get(pk=overdue.pk).is_finished, what="the overdue run")
        lost = Run.objects.get(pk=overdue.pk)
        assert (lost.status, lost.error_type) == (RunStatus.LOST, "Timeout"), lost.error_message
        assert lost.error_message.endswith("another worker finished it")
        assert lost.finished_at - lost.started_at >= timedelta(seconds=1.5), "timeout + grace"
        beat = float(QUICK_HEARTBEAT["WEFT_TEST_HEARTBEAT_INTERVAL"])
        assert lost.finished_at - silenced >= timedelta(seconds=2 * beat), "two beats missed"
        window = timedelta(seconds=float(QUICK_HEARTBEAT["WEFT_TEST_LOST_AFTER"]) + 1)
        wait_for(
            lambda: (
                WorkerProcess.objects.get(pk=other_row.pk).last_beat
                > max(silenced, other_row.started_at) + window
            ),
            what="the other worker to beat (and reap) past the paused one's lost-after window",
        )
        assert Run.objects.get(pk=patient.pk).status == RunStatus.RUNNING, "no timeout: kept"
        assert WorkerProcess.objects.get(pk=paused_id).stopped_at is None, "alive: its lock"
    finally:
        paused.send_signal(signal.SIGCONT)
        open_gate(overdue.pk)  # it returns now: its outcome (done) is late
        open_gate(patient.pk)

    wait_for(lambda: Run.objects.get(pk=patient.pk).is_finished, what="the kept run")
    wait_for(lambda: paused.printed(f"outcome of run {overdue.pk}"), what="the late outcome")
    assert Run.objects.get(pk=overdue.pk).status == RunStatus.LOST
    assert finishes(overdue.pk) == {"count": 1, "kinds": ["lost"]}
    kept = Run.objects.get(pk=patient.pk)
    assert (kept.status, kept.worker_id) == (RunStatus.DONE, paused_id)
    assert finishes(patient.pk) == {"count": 1, "kinds": ["done"]}
    assert not paused.printed("was declared dead"), paused.output()
    assert WorkerProcess.objects.get(pk=paused_id).stopped_at is None
    assert paused.poll() is None


def test_retries_fail_twice_then_done_on_attempt_three(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """Two failed attempts with tracebacks, then done; the finish hook runs once."""
    run = start(registry.get("tests.flaky_fast"))
    start_runjobs("--no-schedules")
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="the third attempt")
    done = Run.objects.get(pk=run.pk)
    assert (done.status, done.attempt, done.result) == (RunStatus.DONE, 3, 3)
    attempts = list(Attempt.objects.filter(run=run))
    assert [(a.number, a.status) for a in attempts] == [(1, "failed"), (2, "failed")]
    for attempt in attempts:
        assert attempt.error_type == "ConnectionError"
        assert attempt.error_traceback.startswith("Traceback (most recent call last):")
        assert "could not reach the mail server" in attempt.error_traceback
    assert attempts[1].ended_at - attempts[0].ended_at >= timedelta(seconds=0.2)
    assert finishes(run.pk) == {"count": 1, "kinds": ["done"]}


def test_timeout_frees_the_concurrency_slot(start_runjobs: Callable[..., Runjobs]) -> None:
    """A run that ignores its timeout is lost after the grace; the next start is allowed
    and executed while the old thread still runs (it runs until the test opens its gate)."""
    stubborn = registry.get("tests.stubborn")
    run = start(stubborn, {"seconds": 3600})
    start_runjobs(
        "--no-schedules", "--concurrency", "1", extra_env={"WEFT_TEST_TIMEOUT_GRACE": "0.5"}
    )
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="giving up on the run")
    lost = Run.objects.get(pk=run.pk)
    assert (lost.status, lost.error_type) == (RunStatus.LOST, "Timeout")
    following = start(stubborn, {"seconds": 0})
    wait_for(lambda: Run.objects.get(pk=following.pk).status == RunStatus.DONE, what="the next")
    open_gate(run.pk)  # the old thread may end now: the worker stops without waiting


def test_a_stopping_worker_claims_no_run_started_after_it_says_so(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """SIGTERM with a run in flight and a long shutdown grace: a run started after the
    "stopping" line is never claimed by that worker, by the rest of the round the signal
    interrupted or by the run thread that ends the run in flight. It is still queued when
    the process exits, and another worker takes it."""
    gated = start(registry.get("tests.watched_gate"))
    stopping = start_runjobs("--shutdown-grace", "600")
    wait_for(lambda: Run.objects.get(pk=gated.pk).status == RunStatus.RUNNING, what="the claim")
    stopping.send_signal(signal.SIGTERM)
    wait_for(lambda: stopping.printed("stopping: no new runs"), what="the stop")
    later = start(registry.get("tests.watched_sleep"), {"seconds": 0})
    open_gate(gated.pk)  # the run in flight ends, on the thread that would claim next
    output = stopping.finish()
    assert stopping.returncode == 0, output
    assert Run.objects.get(pk=gated.pk).status == RunStatus.DONE
    waiting = Run.objects.get(pk=later.pk)
    assert (waiting.status, waiting.worker_id, waiting.attempt) == (RunStatus.QUEUED, None, 0)

    start_runjobs("--no-schedules")
    wait_for(lambda: Run.objects.get(pk=later.pk).is_finished, what="another worker's claim")
    assert Run.objects.get(pk=later.pk).status == RunStatus.DONE
    assert finishes(later.pk) == {"count": 1, "kinds": ["done"]}


def test_api_start_during_an_outage_is_a_clear_503(postgres: PostgresCluster) -> None:
    """With the database down a start is refused with 503 and Retry-After; after, it works."""
    user = get_user_model().objects.create_user("starter", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    client = Client()
    client.force_login(user)
    postgres.stop()
    try:
        refused = client.post(
            "/api/weft/runs/", {"job": "tests.noop"}, content_type="application/json"
        )
    finally:
        postgres.start()
    assert refused.status_code == 503
    assert refused.json() == {
        "detail": "The database is unavailable; try again in a few seconds.",
        "code": "database_unavailable",
    }
    assert refused["Retry-After"] == "5"
    wait_for(reachable, what="the database to be back")
    started = client.post("/api/weft/runs/", {"job": "tests.noop"}, content_type="application/json")
    assert started.status_code == 201, started.content


def test_worker_started_while_the_database_is_down_waits_for_it(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs], tmp_path: Path
) -> None:
    """runjobs does not exit without its database: it backs off, keeps its health file
    fresh, and works once the database is there."""
    run = start(registry.get("tests.noop"))
    health = tmp_path / "alive"
    postgres.stop()
    try:
        worker = start_runjobs("--health-file", str(health))
        wait_for(lambda: worker.printed("database error in the start step"), what="the error")
        wait_for(health.exists, what="the health file")
        touched = health.stat().st_mtime_ns
        wait_for(
            lambda: health.stat().st_mtime_ns > touched,
            what="the loop to touch the health file again through the outage",
        )
        assert worker.poll() is None, worker.output()
    finally:
        postgres.start()
    wait_for(reachable, what="the database to be back")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.DONE, what="the run")
    assert worker.printed("database available again after")

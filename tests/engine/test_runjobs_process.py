"""Real ``runjobs`` processes: signals, shutdown, and several workers on one database."""

from __future__ import annotations

import signal
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from django_weft.jobs.registry import registry
from django_weft.models import Run, RunStatus, Schedule, WorkerProcess
from django_weft.operations import start
from tests.jobs import open_gate
from tests.patience import EVENTUALLY
from tests.processes import Runjobs, runjobs, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def running(job: str, seconds: float, *flags: str, **kwargs: Any) -> tuple[Run, Runjobs]:
    """A run of ``job`` and a ``runjobs`` process that has claimed it."""
    run = start(registry.get(job), {"seconds": seconds})
    process = runjobs(*flags, **kwargs)
    try:
        wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, what="the run")
    except BaseException:
        process.finish()
        raise
    return run, process


def signal_twice(process: Runjobs) -> None:
    """SIGTERM, and once the worker says it is stopping, SIGTERM again."""
    process.send_signal(signal.SIGTERM)
    wait_for(lambda: process.printed("stopping"), what="the first signal to be handled")
    process.send_signal(signal.SIGTERM)


def test_runjobs_sigterm_exits_cleanly() -> None:
    """SIGTERM stops an idle worker: exit code 0, its process row marked stopped."""
    process = runjobs()
    try:
        wait_for(lambda: WorkerProcess.objects.exists(), what="the worker to register")
        process.send_signal(signal.SIGTERM)
    finally:
        output = process.finish()
    assert process.returncode == 0, output
    assert "runjobs stopped" in output
    assert WorkerProcess.objects.get().stopped_at is not None


def test_runjobs_sigterm_lets_a_run_finish_within_the_grace() -> None:
    """A run shorter than the shutdown grace finishes done after SIGTERM."""
    run, process = running("tests.sleep", 1.0, "--shutdown-grace", "30")
    try:
        process.send_signal(signal.SIGTERM)
    finally:
        output = process.finish()
    assert process.returncode == 0, output
    assert Run.objects.get(pk=run.pk).status == RunStatus.DONE


def test_runjobs_sigterm_aborts_runs_past_the_grace() -> None:
    """A run longer than the grace is aborted at its next sleep, and the worker exits."""
    run, process = running("tests.sleep", 600.0, "--shutdown-grace", "0.5")
    try:
        process.send_signal(signal.SIGTERM)
    finally:
        output = process.finish()
    assert process.returncode == 0, output
    finished = Run.objects.get(pk=run.pk)
    assert finished.status == RunStatus.ABORTED
    assert finished.abort_requested_at is not None


def test_runjobs_second_signal_forces_the_stop() -> None:
    """A second SIGTERM aborts running runs at once instead of waiting out a long grace."""
    run, process = running("tests.sleep", 600.0, "--shutdown-grace", "600")
    try:
        signal_twice(process)
    finally:
        output = process.finish()
    assert process.returncode == 0, output
    assert Run.objects.get(pk=run.pk).status == RunStatus.ABORTED


def test_runjobs_two_processes_fire_each_slot_once() -> None:
    """Two workers over the same 200 due rows: every slot fires exactly once."""
    now = timezone.now()
    for number in range(200):
        Schedule.objects.create(
            name=f"due {number}", job="tests.noop", at=now - timedelta(seconds=number)
        )
    first, second = runjobs("--once"), runjobs("--once")
    outputs = [first.finish(120), second.finish(120)]
    assert (first.returncode, second.returncode) == (0, 0), outputs
    assert Run.objects.count() == 200
    assert Run.objects.filter(status=RunStatus.DONE).count() == 200
    per_schedule = {s.pk: s.runs.count() for s in Schedule.objects.all()}
    assert set(per_schedule.values()) == {1}


def test_runjobs_second_signal_ends_a_run_that_ignores_aborts() -> None:
    """A run that never sleeps or checks cannot hold a forced stop: it ends aborted, exit 1."""
    run, process = running("tests.spin", 300.0, "--shutdown-grace", "600")
    try:
        signal_twice(process)
    finally:
        output = process.finish()
    assert process.returncode == 1, output
    ended = Run.objects.get(pk=run.pk)
    assert (ended.status, ended.error_type) == (RunStatus.ABORTED, "WorkerStopped")


def test_runjobs_keeps_timeouts_while_runs_finish_after_sigterm() -> None:
    """A stopping worker still keeps its runs' timeouts (nobody else will: it beats): a
    run that ignores its timeout is finished lost (Timeout) after the timeout's grace, not
    at the end of a long shutdown grace, and the worker exits."""
    run, process = running(
        "tests.stubborn",
        3600.0,
        "--shutdown-grace",
        "600",
        extra_env={"WEFT_TEST_TIMEOUT_GRACE": "2"},
    )
    try:
        process.send_signal(signal.SIGTERM)
        output = process.finish(EVENTUALLY)
    finally:
        open_gate(run.pk)  # its abandoned thread may end
    assert process.returncode == 0, output
    lost = Run.objects.get(pk=run.pk)
    assert (lost.status, lost.error_type) == (RunStatus.LOST, "Timeout")
    assert "did not stop within 2s of being asked" in lost.error_message


def test_runjobs_keeps_beating_while_runs_finish_after_sigterm() -> None:
    """During the shutdown grace the worker still beats, so its finishing run is not lost."""
    fast = {"WEFT_TEST_HEARTBEAT_INTERVAL": "0.2", "WEFT_TEST_LOST_AFTER": "1"}
    run, process = running("tests.spin", 2.5, "--shutdown-grace", "30", extra_env=fast)
    watcher = runjobs("--no-schedules", extra_env=fast)
    try:
        process.send_signal(signal.SIGTERM)
        output = process.finish()
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.finish()
    assert process.returncode == 0, output
    assert Run.objects.get(pk=run.pk).status == RunStatus.DONE

"""Durable steps and waits inside a run (DESIGN.md section 9): steps recorded across
attempts, sleeps and waits for signals that end the attempt and hold no worker, on the
driven clock with an inline worker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from django_weft.exceptions import Forbidden, InvalidSignal, RunFinished, RunNotFound
from django_weft.jobs.registry import registry
from django_weft.models import (
    Attempt,
    AuditAction,
    AuditRecord,
    Run,
    RunStatus,
    Signal,
    StepKind,
    StepRecord,
)
from django_weft.operations import abort, send_signal, send_signal_for, start
from django_weft.testing import DrivenClock, Rehearsal
from tests.flows.jobs import calls

pytestmark = pytest.mark.django_db(transaction=True)

NOW = timedelta(0)
HOUR = timedelta(hours=1)


def run_of(name: str, args: dict[str, object] | None = None) -> Run:
    return start(registry.get(name), args or {})


def fresh(run: Run) -> Run:
    return Run.objects.get(pk=run.pk)


def test_step_runs_once_across_retries(rehearsal: Rehearsal) -> None:
    """A step whose attempt failed after it is not called again: the retry reads its
    record, and the run ends with the first attempt's result of it."""
    run = run_of("tests.flows.checkout", {"amount": 25, "fail_attempts": 2})
    rehearsal.advance(NOW)
    rehearsal.advance(timedelta(minutes=1))
    rehearsal.advance(timedelta(minutes=2))
    done = fresh(run)
    assert (done.status, done.attempt) == (RunStatus.DONE, 3)
    assert done.result == {"charged": {"charge": 1, "amount": 25}, "attempt": 3}
    assert calls(run.pk) == {"charge": 1, "body": 3}, "charged once, the body ran three times"
    record = StepRecord.objects.get(run=run)
    assert (record.kind, record.name, record.attempt) == (StepKind.STEP, "charge", 1)
    assert Attempt.objects.filter(run=run).count() == 2


def test_step_result_json_cannot_store_fails_the_attempt_naming_the_step(
    rehearsal: Rehearsal,
) -> None:
    run = run_of("tests.flows.unstorable_step")
    rehearsal.advance(NOW)
    failed = fresh(run)
    assert (failed.status, failed.error_type) == (RunStatus.FAILED, "InvalidStep")
    assert 'step "opens a socket" returned a result that is not JSON' in failed.error_message
    assert not StepRecord.objects.exists(), "nothing recorded"


def test_sleep_ends_the_attempt_and_wakes_at_its_moment(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """A sleeping run is waiting with no worker; it goes on at its moment, in the same
    attempt, its steps not repeated and the sleep not slept again."""
    run = run_of("tests.flows.nap")
    started = clock.now()
    rehearsal.advance(NOW)
    waiting = fresh(run)
    assert (waiting.status, waiting.worker_id, waiting.attempt) == (RunStatus.WAITING, None, 1)
    assert (waiting.wake_at, waiting.awaiting) == (started + HOUR, "")
    assert calls(run.pk) == {"before": 1, "body": 1}

    rehearsal.advance(HOUR - timedelta(seconds=1))
    assert fresh(run).status == RunStatus.WAITING, "not before its moment"
    rehearsal.advance(timedelta(seconds=1))
    done = fresh(run)
    assert (done.status, done.result, done.attempt) == (RunStatus.DONE, "awake", 1)
    assert calls(run.pk) == {"before": 1, "body": 2, "after": 1}
    assert not Attempt.objects.filter(run=run).exists(), "a wait is not a failed attempt"
    sleep = StepRecord.objects.get(run=run, kind=StepKind.SLEEP)
    assert (sleep.name, sleep.result) == ("#1", {"until": (started + HOUR).isoformat()})


def test_signal_wakes_the_run_waiting_for_it_with_its_payload(rehearsal: Rehearsal) -> None:
    run = run_of("tests.flows.approval")
    rehearsal.advance(NOW)
    waiting = fresh(run)
    assert (waiting.status, waiting.awaiting, waiting.wake_at) == (
        RunStatus.WAITING,
        "approval",
        None,
    )
    rehearsal.advance(timedelta(days=30))
    assert fresh(run).status == RunStatus.WAITING, "no timeout: it waits for the signal"

    send_signal(run, "other", {"ok": False})
    assert fresh(run).status == RunStatus.WAITING, "a signal of another name does not wake it"
    send_signal(run, "approval", {"approved_by": "ada"})
    assert fresh(run).status == RunStatus.QUEUED
    rehearsal.advance(NOW)
    done = fresh(run)
    assert (done.status, done.result, done.attempt) == (
        RunStatus.DONE,
        {"approved_by": "ada"},
        1,
    )
    assert calls(run.pk) == {"body": 2}
    received = Signal.objects.get(run=run, name="approval")
    assert received.received_at is not None
    assert Signal.objects.get(run=run, name="other").received_at is None


def test_signal_sent_before_the_wait_is_kept_for_it(rehearsal: Rehearsal) -> None:
    """A signal sent while the run is queued is received by its wait, which then does
    not wait at all."""
    run = run_of("tests.flows.approval")
    send_signal(run, "approval", "early")
    rehearsal.advance(NOW)
    done = fresh(run)
    assert (done.status, done.result) == (RunStatus.DONE, "early")
    assert calls(run.pk) == {"body": 1}, "it never waited"


def test_waits_receive_signals_of_their_name_oldest_first(rehearsal: Rehearsal) -> None:
    run = run_of("tests.flows.approval", {"waits": 3})
    rehearsal.advance(NOW)
    send_signal(run, "approval", 1)
    send_signal(run, "approval", 2)
    rehearsal.advance(NOW)
    assert fresh(run).status == RunStatus.WAITING, "two signals for three waits"
    send_signal(run, "approval", 3)
    rehearsal.advance(NOW)
    assert fresh(run).result == [1, 2, 3]
    assert list(
        StepRecord.objects.filter(run=run, kind=StepKind.SIGNAL).values_list("name", flat=True)
    ) == ["approval#1", "approval#2", "approval#3"]


def test_wait_times_out_on_the_driven_clock(rehearsal: Rehearsal) -> None:
    """The job sees SignalTimeout at its timeout, measured from when it first waited."""
    run = run_of("tests.flows.approval", {"timeout": 3600})
    rehearsal.advance(NOW)
    assert fresh(run).wake_at is not None
    rehearsal.advance(HOUR - timedelta(seconds=1))
    assert fresh(run).status == RunStatus.WAITING
    rehearsal.advance(timedelta(seconds=1))
    assert (fresh(run).status, fresh(run).result) == (RunStatus.DONE, "timed out")
    record = StepRecord.objects.get(run=run, kind=StepKind.SIGNAL)
    assert record.result["timed_out"] is True
    with pytest.raises(RunFinished):
        send_signal(run, "approval", "too late")


def test_signal_refusals_name_what_is_wrong_and_write_nothing(rehearsal: Rehearsal) -> None:
    run = run_of("tests.flows.approval")
    with pytest.raises(InvalidSignal, match="signal name"):
        send_signal(run, "  ")
    with pytest.raises(InvalidSignal, match="signal name"):
        send_signal(run, "approval#2")
    with pytest.raises(InvalidSignal, match=r"signal payload: payload\.note"):
        send_signal(run, "approval", {"note": "a\x00b"})
    with pytest.raises(InvalidSignal, match="signal payload: is not JSON"):
        send_signal(run, "approval", {1, 2})
    assert not Signal.objects.exists()
    rehearsal.advance(NOW)
    gone = fresh(run)
    gone.delete()
    with pytest.raises(RunNotFound):
        send_signal(gone, "approval")


def test_abort_ends_a_waiting_run_at_once(rehearsal: Rehearsal) -> None:
    run = run_of("tests.flows.approval")
    rehearsal.advance(NOW)
    assert abort(fresh(run)) is True
    aborted = fresh(run)
    assert (aborted.status, aborted.finished_at is not None) == (RunStatus.ABORTED, True)
    with pytest.raises(RunFinished, match="has already finished"):
        send_signal(aborted, "approval")


def test_async_job_steps_sleeps_and_waits(rehearsal: Rehearsal) -> None:
    run = run_of("tests.flows.async_approval")
    rehearsal.advance(NOW)
    assert (fresh(run).status, fresh(run).awaiting) == (RunStatus.WAITING, "")
    rehearsal.advance(timedelta(seconds=60))
    assert (fresh(run).status, fresh(run).awaiting) == (RunStatus.WAITING, "go")
    send_signal(run, "go", [1])
    rehearsal.advance(NOW)
    done = fresh(run)
    assert (done.status, done.result) == (RunStatus.DONE, {"stamp": "stamped", "payload": [1]})


def test_signal_for_needs_the_right_to_steer_the_run_and_is_on_record(
    rehearsal: Rehearsal,
) -> None:
    users = get_user_model().objects
    owner = users.create_user("owner")
    owner.user_permissions.add(Permission.objects.get(codename="add_run"))
    guest = users.create_user("guest")
    run = start(registry.get("tests.flows.approval"), owner=owner)
    rehearsal.advance(NOW)
    with pytest.raises(Forbidden, match="signal run"):
        send_signal_for(users.get(pk=guest.pk), fresh(run), "approval", "from a guest")
    assert not Signal.objects.exists()
    assert not AuditRecord.objects.filter(action=AuditAction.SIGNAL).exists()

    signal = send_signal_for(users.get(pk=owner.pk), fresh(run), "approval", "yes")
    assert signal.sent_by == owner
    record = AuditRecord.objects.get(action=AuditAction.SIGNAL)
    assert (record.actor, record.details) == (owner, {"signal": "approval"})
    rehearsal.advance(NOW)
    assert fresh(run).result == "yes"


@pytest.mark.parametrize("name", ["", "approval#2", "x" * 101])
def test_wait_for_a_name_no_signal_could_have_fails_the_attempt(
    rehearsal: Rehearsal, name: str
) -> None:
    """A wait that could never end is refused at once, naming the problem."""
    run = run_of("tests.flows.wait_named", {"signal": name})
    rehearsal.advance(NOW)
    failed = fresh(run)
    assert (failed.status, failed.error_type) == (RunStatus.FAILED, "InvalidSignal")
    assert failed.error_message.startswith("signal name:")
    assert not StepRecord.objects.exists()

"""The process executor (django_weft/engine/worker/process_pool.py): jobs in child processes.

Real children, started with ``spawn`` by the worker's pool: a run of an
``executor="process"`` job goes through the same run step there (result, state, attempt,
due, aborts), a child that holds the GIL past its timeout's grace is killed and replaced,
and a child that dies under a run fails its attempt with ``ProcessDied``. The timeout
test drives the clock; the others wait for events, never for a duration.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from django.db import connections
from django.test import override_settings

from django_weft.conf import weft_settings
from django_weft.engine.worker.loop import Worker
from django_weft.jobs.registry import Job, job, registry
from django_weft.models import Document, Run, RunStatus
from django_weft.operations import abort, start
from django_weft.testing import DrivenClock
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

#: Seconds a child may take to start on a busy machine (an interpreter, django.setup()).
CHILD_START = 120


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still exists (a reaped child does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def recorded_pid(run: Run) -> int | None:
    """The pid a tests.in_process run wrote into its state, once it did."""
    data = Document.objects.get(pk=Run.objects.get(pk=run.pk).state_id).data
    return data["pid"]  # type: ignore[no-any-return]


def finished(run: Run) -> Run:
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, CHILD_START, f"run {run.pk}")
    return Run.objects.get(pk=run.pk)


def test_process_job_runs_in_a_child_as_it_would_on_a_thread(running_worker: Worker) -> None:
    """The job runs in another process; its result, its attempt, its run id and its state
    writes reach the run as from a thread, and the child serves the next run too."""
    first, second = (start(registry.get("tests.in_process"), {"seconds": 0}) for _ in range(2))
    done = [finished(first), finished(second)]
    assert [run.status for run in done] == [RunStatus.DONE, RunStatus.DONE]
    for run in done:
        assert run.result["pid"] != os.getpid()
        assert run.result == {
            "pid": run.result["pid"],
            "attempt": 1,
            "due": None,
            "run": str(run.pk),
        }
        assert recorded_pid(run) == run.result["pid"], "its state change was committed"
    assert running_worker.pool.started <= 2, "children are kept from run to run"


def test_abort_reaches_a_job_in_a_child(running_worker: Worker) -> None:
    """An abort request stops a child's job at its next sleep(); the run ends aborted."""
    run = start(registry.get("tests.in_process"), {"seconds": 600})
    wait_for(lambda: recorded_pid(run) is not None, CHILD_START, "the job to start in its child")
    assert abort(run)
    assert finished(run).status == RunStatus.ABORTED


def test_child_killed_under_a_run_fails_it_and_is_replaced(running_worker: Worker) -> None:
    """SIGKILL to the child: the attempt fails with ProcessDied naming the signal, the
    worker lives on, and the next run gets a new child."""
    run = start(registry.get("tests.in_process"), {"seconds": 600})
    wait_for(lambda: recorded_pid(run) is not None, CHILD_START, "the job to start in its child")
    killed = recorded_pid(run)
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    failed = finished(run)
    assert (failed.status, failed.error_type) == (RunStatus.FAILED, "ProcessDied")
    assert failed.error_message == (
        "the child process running the job died (killed by SIGKILL) before it reported how"
        " the run ended; another process takes its place"
    )
    assert failed.error_class_path == "django_weft.exceptions.RunProcessDied"
    following = finished(start(registry.get("tests.in_process"), {"seconds": 0}))
    assert following.status == RunStatus.DONE
    assert following.result["pid"] not in (killed, os.getpid())


def test_child_that_exits_fails_the_attempt_with_its_exit_code(running_worker: Worker) -> None:
    """A job that ends its own process (as a crash in C code would) fails with its code."""
    failed = finished(start(registry.get("tests.exits_in_process")))
    assert (failed.status, failed.error_type) == (RunStatus.FAILED, "ProcessDied")
    assert "died (exit code 3)" in failed.error_message
    assert finished(start(registry.get("tests.noop"))).status == RunStatus.DONE


@pytest.fixture
def driven_worker(clock: DrivenClock) -> Iterator[Worker]:
    """A worker on the driven clock with real run threads, ticked by the test."""
    worker = Worker(
        clock=clock, executor="django_weft.engine.worker.executors.ThreadExecutor", concurrency=1
    )
    worker.start()
    yield worker
    worker.force_stop()
    worker.close()
    connections.close_all()


def tick_until(worker: Worker, condition: Callable[[], bool], what: str) -> None:
    """Tick ``worker`` (recording what its run threads delivered) until ``condition``."""

    def ticked() -> bool:
        worker.tick()
        return condition()

    wait_for(ticked, CHILD_START, what)


def test_gil_holding_job_is_killed_at_its_timeout_grace(
    clock: DrivenClock, driven_worker: Worker
) -> None:
    """A catastrophic regex never hears its timeout: at the deadline it is asked to stop,
    at the deadline plus the grace its child is killed and the run ends lost as every
    timeout does; the loop ticks meanwhile, and the next run gets a new child."""
    run = start(registry.get("tests.catastrophic_regex"))
    driven_worker.tick()
    (execution,) = driven_worker.in_flight.live()
    assert execution.in_process
    wait_for(lambda: driven_worker.pool.started == 1, CHILD_START, "the child to start")

    clock.skip(timedelta(seconds=0.5))
    driven_worker.tick()
    assert execution.timed_out
    assert not execution.given_up
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, "asked, not yet given up"

    clock.skip(timedelta(seconds=weft_settings.TIMEOUT_GRACE))
    tick_until(driven_worker, lambda: Run.objects.get(pk=run.pk).is_finished, "the give-up")
    lost = Run.objects.get(pk=run.pk)
    assert (lost.status, lost.error_type) == (RunStatus.LOST, "Timeout")
    assert lost.error_message == (
        "the run passed its timeout and did not stop within"
        f" {weft_settings.TIMEOUT_GRACE:g}s of being asked; its process was killed"
    )
    tick_until(driven_worker, lambda: not driven_worker.in_flight, "the child to be killed")

    following = start(registry.get("tests.in_process"), {"seconds": 0})
    tick_until(driven_worker, lambda: Run.objects.get(pk=following.pk).is_finished, "the next")
    assert Run.objects.get(pk=following.pk).status == RunStatus.DONE
    assert driven_worker.pool.started == 2, "the killed child was replaced"


def test_stopped_worker_leaves_no_child_behind(
    worker_threads: Callable[[], Worker],
) -> None:
    """A stopping worker aborts the run in its child and ends its children with it."""
    worker = worker_threads()
    run = start(registry.get("tests.in_process"), {"seconds": 600})
    wait_for(lambda: recorded_pid(run) is not None, CHILD_START, "the job to start in its child")
    child = recorded_pid(run)
    assert child is not None
    stopping = threading.Thread(target=worker.force_stop)
    stopping.start()
    stopping.join()
    assert finished(run).status == RunStatus.ABORTED
    wait_for(lambda: not pid_alive(child), CHILD_START, "the child to end with its worker")


@override_settings(WEFT_QUEUE_EXECUTORS={"cpu": "process"})
def test_queue_setting_sends_a_queue_to_the_pool(running_worker: Worker) -> None:
    """A job with no executor of its own runs where WEFT_QUEUE_EXECUTORS sends its queue."""
    done = finished(start(registry.get("tests.queued_for_processes")))
    assert done.status == RunStatus.DONE
    assert done.result != os.getpid()


def test_queue_setting_is_read_at_each_claim(running_worker: Worker) -> None:
    """Without the setting, the same job runs on a thread of the worker."""
    done = finished(start(registry.get("tests.queued_for_processes")))
    assert done.result == os.getpid()


@override_settings(WEFT_QUEUE_EXECUTORS={"cpu": "process", "io": "thread"})
def test_job_executor_wins_over_its_queue() -> None:
    """A job's own executor decides; its queue's decides only when it names none."""

    def noop(ctx: object) -> None: ...

    assert Job(noop, "a", queue="cpu").runs_in_process
    assert not Job(noop, "b", queue="cpu", executor="thread").runs_in_process
    assert Job(noop, "c", queue="io", executor="process").runs_in_process
    assert not Job(noop, "d", queue="other").runs_in_process


def test_job_refuses_an_unknown_executor() -> None:
    """The decorator names the accepted values."""
    with pytest.raises(
        ValueError, match=r'executor must be "thread", "process" or None, not \'fork\''
    ):
        job("tests.never_registered", executor="fork")

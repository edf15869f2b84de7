"""Real ``runjobs`` processes running jobs of the process executor through what code that
cannot hear its timeout does to a worker.

A catastrophic regex holds the GIL in its child far past its timeout: the child is killed
at the timeout's grace and the run ends lost with ``Timeout``, while the worker's
heartbeat kept beating and its liveness lock stayed held; the next run gets a new child.
A child SIGKILLed under its run fails that attempt and is replaced; a worker SIGKILLed
under a GIL-holding child takes the child with it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from django_weft.jobs.registry import registry
from django_weft.models import Document, Run, RunStatus, WorkerProcess
from django_weft.operations import start
from tests.faults.conftest import lock_holder
from tests.faults.servers import PostgresCluster
from tests.processes import Runjobs, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

#: The grace the workers give a run past its timeout: long enough for many heartbeats.
GRACE = "5"


def recorded_pid(run: Run) -> int | None:
    """The pid a tests.in_process run wrote into its state, once it did."""
    data = Document.objects.get(pk=Run.objects.get(pk=run.pk).state_id).data
    return data["pid"]  # type: ignore[no-any-return]


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie waiting for a reaper."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def pool_children_of(pid: int) -> list[int]:
    """The pids of ``pid``'s children that run jobs (multiprocessing's resource tracker,
    its other child, left out), from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(int(child))
    return found


def threads_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("Threads:")).split()[1])


def test_gil_holding_job_is_killed_at_its_timeout_while_the_worker_beats(
    postgres: PostgresCluster, start_runjobs: Callable[..., Runjobs]
) -> None:
    """The regex never returns and never lets its child's other threads run: its child is
    killed at the timeout's grace and the run ends lost with Timeout, the worker beating
    all along (its row's beats advance, its liveness lock held, never declared dead);
    the next run succeeds in a new child."""
    run = start(registry.get("tests.catastrophic_regex"))
    worker = start_runjobs(
        "--no-schedules", "--concurrency", "1", extra_env={"WEFT_TEST_TIMEOUT_GRACE": GRACE}
    )
    wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, what="the claim")
    worker_id = Run.objects.get(pk=run.pk).worker_id
    beats: set[object] = set()

    def ended_watching_beats() -> bool:
        row = WorkerProcess.objects.get(pk=worker_id)
        ended = Run.objects.get(pk=run.pk).is_finished
        if not ended:
            beats.add(row.last_beat)
            assert lock_holder(postgres, worker_id) is not None, "its liveness lock is held"
        return ended

    wait_for(ended_watching_beats, timeout=120, what="the run to be given up on")
    lost = Run.objects.get(pk=run.pk)
    assert (lost.status, lost.error_type) == (RunStatus.LOST, "Timeout")
    assert lost.error_message == (
        f"the run passed its timeout and did not stop within {GRACE}s of being asked;"
        " its process was killed"
    )
    assert len(beats) >= 2, "the heartbeat went on while the job held its child's GIL"
    assert WorkerProcess.objects.get(pk=worker_id).stopped_at is None, "never declared dead"
    wait_for(lambda: worker.printed("killed the child process of"), what="the kill")

    following = start(registry.get("tests.in_process"), {"seconds": 0})
    wait_for(lambda: Run.objects.get(pk=following.pk).is_finished, timeout=120, what="the next")
    done = Run.objects.get(pk=following.pk)
    assert done.status == RunStatus.DONE
    assert done.worker_id == worker_id
    assert worker.poll() is None, worker.output()
    output = worker.stop()
    assert worker.returncode == 0, output


def test_sigkilled_child_fails_its_attempt_and_is_replaced(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """SIGKILL to a child mid-run: that attempt fails with ProcessDied, the worker lives
    on, and the next run of the same job executes in a new child."""
    run = start(registry.get("tests.in_process"), {"seconds": 600})
    worker = start_runjobs("--no-schedules", "--concurrency", "1")
    wait_for(lambda: recorded_pid(run) is not None, timeout=120, what="the job in its child")
    child = recorded_pid(run)
    assert child is not None
    assert child != worker.pid
    os.kill(child, signal.SIGKILL)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="the failed attempt")
    failed = Run.objects.get(pk=run.pk)
    assert (failed.status, failed.error_type) == (RunStatus.FAILED, "ProcessDied")
    assert "died (killed by SIGKILL)" in failed.error_message

    following = start(registry.get("tests.in_process"), {"seconds": 0})
    wait_for(lambda: Run.objects.get(pk=following.pk).is_finished, timeout=120, what="the next")
    done = Run.objects.get(pk=following.pk)
    assert done.status == RunStatus.DONE
    assert done.result["pid"] not in (child, worker.pid)
    assert worker.poll() is None, worker.output()


def test_sigkilled_worker_takes_its_gil_holding_child_with_it(
    start_runjobs: Callable[..., Runjobs],
) -> None:
    """A worker killed while its child holds the GIL in a regex leaves no child burning a
    CPU: the kernel ends the child with its parent (no Python code of the child could)."""
    run = start(registry.get("tests.catastrophic_regex"))
    doomed = start_runjobs("--no-schedules", "--concurrency", "1")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, what="the claim")
    wait_for(lambda: pool_children_of(doomed.pid), timeout=120, what="the worker's child")
    (child,) = pool_children_of(doomed.pid)
    # Its listener thread runs once it serves: the run sent before it is in the regex.
    wait_for(lambda: threads_of(child) >= 2, timeout=120, what="the child to serve its run")
    doomed.send_signal(signal.SIGKILL)
    doomed.finish()
    wait_for(lambda: not pid_alive(child), timeout=60, what="the child to die with its worker")

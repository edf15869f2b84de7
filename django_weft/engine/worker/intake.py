"""The claim step: which runs this worker takes in, and how each starts executing.

A worker claims only runs of the jobs (and versions) deployed in it, of the queues it
was told, as many as its executor has free slots (:func:`~django_weft.engine.runs.claiming.claim`
writes the claim). Each claimed run becomes an
:class:`~django_weft.engine.worker.execution.Execution` with its timeout's deadline, goes in
flight, and is handed to the executor; its thread delivers the report to the queue and
wakes the loop. Apart from the loop because it is the one step that knows about jobs,
queues, threads and the process pool at once.

A run thread that delivered its report claims the next run itself, one at a time, while
the last claims found more than there were free slots (``Lookout.more_to_claim``) and no
more reports wait for the loop than the executor has slots. Under a backlog the run
threads then never wait for the loop's round (recording finishes, the heartbeat, the
fires) to hand them work, while the loop records their reports in batches. The claim is
the same statement with a limit of one, made by the thread that runs the run next: it
stays the run's durable "begun" mark, and a worker killed at any moment holds no run
claimed for later, only the runs it was executing (finished lost by the reaper) and the
outcomes not yet recorded, which the bound on waiting reports keeps threads from piling
up. Under flow limits that concern its claims, a worker leaves every claim to the loop:
each claim then waits its turn on the limits' locks, and one claim for all the free
slots takes one turn where the threads would take one each. A claim that fails on the
run thread (the database went away) ends the thread's turn: the loop's error boundary
meets the outage and claims again after it. Executors that run tasks in the caller
(``InlineExecutor``) leave every claim to the loop.

A quiet worker (:mod:`~django_weft.engine.worker.membership`) claims nowhere: the loop
skips its claim steps and a run thread claims nothing next. After the first stop signal
no thread claims: the loop's claim step and the run threads'
claims alike go through :meth:`Shutdown.unless_stopping
<django_weft.engine.worker.shutdown.Shutdown.unless_stopping>`, which looks at the stop where
the claim is made (a round begun before the signal still reaches its claim step).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from functools import partial

from django_weft.engine.flows.waking import wake_due
from django_weft.engine.limits.defaults import write_defaults
from django_weft.engine.runs.claiming import claim, deployed_pairs, under_limits
from django_weft.engine.worker import timeouts
from django_weft.engine.worker.execution import Execution, execute
from django_weft.engine.worker.inflight import InFlight
from django_weft.engine.worker.lookout import Lookout
from django_weft.engine.worker.membership import Membership
from django_weft.engine.worker.options import WorkerOptions
from django_weft.engine.worker.process_pool import ProcessPool, execute_in_child
from django_weft.engine.worker.reports import Reports
from django_weft.engine.worker.shutdown import Shutdown
from django_weft.jobs.registry import Job, registry
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import Document, Run, WorkerProcess
from django_weft.timing.clocks import Clock

logger = logging.getLogger("django_weft.worker")

#: How many unknown task paths one look registers at most: the rest wait for the next.
TASK_PATHS_PER_LOOK = 100


def _publish_state(document: Document) -> None:
    """A run's state change, from its own thread, to the live views."""
    changes = Changes()
    changes.document(document.pk)
    publisher.publish(changes)


class Intake:
    """What one worker claims, and the claim step."""

    def __init__(
        self,
        options: WorkerOptions,
        *,
        membership: Membership,
        in_flight: InFlight,
        reports: Reports,
        lookout: Lookout,
        wake: threading.Event,
        pool: ProcessPool,
        clock: Clock,
        shutdown: Shutdown,
    ) -> None:
        self.options = options
        self._membership = membership
        self._in_flight = in_flight
        self._reports = reports
        self._lookout = lookout
        self._wake = wake
        self._pool = pool
        self._clock = clock
        self._shutdown = shutdown
        self._deployed_pairs: tuple[tuple[str, int], ...] = ()
        self._deployed_for = -1
        #: Task paths of queued runs that named no task here, as of a registry generation.
        self._not_tasks: set[str] = set()
        self._not_tasks_for = -1

    def jobs(self) -> list[Job]:
        """The registered jobs this worker executes (``--job``; default: all)."""
        names = self.options.jobs
        return [job for job in registry if names is None or job.name in names]

    def deployed(self) -> tuple[tuple[str, int], ...]:
        """What this worker claims, worked out again only when the registry changes
        (when the flow limits its jobs declare are written, where they have no row)."""
        if self._deployed_for != registry.generation:
            jobs = self.jobs()
            write_defaults(jobs, self._clock.now())
            self._deployed_pairs = deployed_pairs(jobs)
            self._deployed_for = registry.generation
        return self._deployed_pairs

    def find_tasks(self) -> None:
        """Register the tasks that queued runs name and this process has not imported.

        A task is stored by its import path, which the registry's finder imports (see
        :mod:`django_weft.tasks`); a path that names no task leaves its runs blocked, and is
        not asked about again until the deployed jobs change.
        """
        if self._not_tasks_for != registry.generation:
            self._not_tasks, self._not_tasks_for = set(), registry.generation
        known = {job.name for job in registry} | self._not_tasks
        for path in Run.objects.waiting_task_paths(known=known, limit=TASK_PATHS_PER_LOOK):
            if path not in registry:
                self._not_tasks.add(path)
        self._not_tasks_for = registry.generation

    def look(self, now: datetime, changes: Changes, *, everywhere: bool) -> bool:
        """What the claim cannot see for itself: new task paths (in a full look), and the
        next retry or wake (then, or once one came due), waking the waiting runs whose
        moment came; True if the next claim may find more.

        Apart from :meth:`step`, and after it in a round: the claim is what a NOTIFY
        woke the loop for, and these reads must not stand in front of it.
        """
        found = False
        if everywhere:
            generation = registry.generation
            self.find_tasks()
            found = registry.generation != generation
        if everywhere or self._lookout.retry_due(now):
            # Waiting runs whose moment came are queued first, so the claim sees them.
            found = bool(wake_due(now, changes)) or found
            self._lookout.next_retry = Run.objects.next_retry()
        if found:
            self._lookout.more_to_claim = True
        return found

    def step(self, now: datetime, changes: Changes) -> bool:
        """Claim as many runs as there are free slots and start them; True if any."""
        process = self._membership.process
        assert process is not None
        free = self._in_flight.executor.free_slots()
        if free <= 0:
            return False
        self._lookout.next_slot = None  # the claim says it again if a rate still holds
        runs = self._claim(process, now, limit=free)
        self._lookout.more_to_claim = len(runs) == free
        for run in runs:
            changes.run(run.pk)
            execution = self._execution(run, process)
            self._in_flight.submit(execution, partial(self._execute, execution))
        return bool(runs)

    def _claim(self, process: WorkerProcess, now: datetime, *, limit: int) -> list[Run]:
        """Up to ``limit`` runs claimed for ``process``; none once the worker is stopping."""
        return self._shutdown.unless_stopping(
            partial(
                claim,
                self.deployed(),
                limit=limit,
                worker=process,
                now=now,
                queues=self.options.queues,
                held=self._lookout.slot_at,
            )
        )

    def _execution(self, run: Run, process: WorkerProcess) -> Execution:
        """What this worker needs to steer ``run``, just claimed."""
        job = registry.deployed(run.job, run.job_version)
        execution = Execution(
            run=run,
            worker_id=process.pk,
            deadline=timeouts.deadline(run.job, run.job_version, run.started_at),
            in_process=job is not None and job.runs_in_process,
        )
        if run.abort_requested_at is not None:
            execution.abort.set()
        return execution

    def _execute(self, execution: Execution) -> None:
        """On a run thread: run ``execution``, then each run this thread claims next."""
        current: Execution | None = execution
        while current is not None:
            self._execute_one(current)
            current = self._claim_next(current)

    def _execute_one(self, execution: Execution) -> None:
        """Run the execution (here, or in a child process of the pool), hand its report
        over, wake the loop."""
        try:
            deliver = partial(self._reports.deliver, execution)
            if execution.in_process:
                execute_in_child(
                    execution, self._pool, deliver=deliver, on_state_change=_publish_state
                )
            else:
                execute(execution, deliver=deliver, on_state_change=_publish_state)
        finally:
            self._wake.set()

    def _claim_next(self, previous: Execution) -> Execution | None:
        """On the run thread of ``previous``, which delivered its report: the run it
        claimed to run next, in the same executor slot, or None (see the module's
        docstring for when)."""
        process = self._membership.process
        if (
            not self._in_flight.executor.runs_beside_caller
            or previous.given_up
            or process is None
            or self._membership.quiet
            or not self._lookout.more_to_claim
            # Outcomes wait in memory until the loop records them; a killed worker loses
            # them, so threads do not outrun a loop that is slow to record.
            or len(self._reports) > self._in_flight.executor.concurrency
            # Under flow limits each claim takes a turn on their locks: the loop's
            # claim for every free slot takes one turn where threads would take one each.
            or under_limits()
        ):
            return None
        now = self._clock.now()
        try:
            runs = self._claim(process, now, limit=1)
        except Exception as error:
            logger.debug("a run thread's claim failed (%s); the loop claims next", error)
            return None
        if not runs:
            return None
        execution = self._execution(runs[0], process)
        self._in_flight.hand_slot(previous, execution)
        changes = Changes()
        changes.run(execution.run.pk)
        publisher.publish(changes)
        if execution.deadline is not None:
            # The loop's sleep must end by this run's timeout, which it has not seen.
            self._wake.set()
        return execution

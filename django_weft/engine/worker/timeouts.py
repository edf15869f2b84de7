"""Run timeouts: a run past its job's ``timeout`` is asked to stop; one that has not
stopped ``WEFT_TIMEOUT_GRACE`` seconds later is given up on and finished as lost.

A thread cannot be killed from outside, so a timeout is two moments per run, both on the
worker's clock: the deadline, when the run's abort is set (a run that honours it fails
with ``Timeout``), and the deadline plus the grace, when the worker stops waiting, frees
the slot and reports the run lost itself. The deadline is worked out from the run's row
alone (:func:`deadline`: its job's timeout as deployed, from the attempt's start), so
that other workers find the same one: when the worker running it is silent past it
(paused, hung, its loop held by a job that holds the GIL), they finish the run in its
place (:func:`~django_weft.engine.worker.reaping.finish_overdue`). A run on a thread
that ignores it goes on until it returns (its outcome discarded); a run of the process
executor is killed with its child process then
(:mod:`~django_weft.engine.worker.process_pool`). The loop sleeps until the next of them
(:meth:`Timeouts.moments`) and enforces both in one step (:meth:`Timeouts.step`); they
live apart from the loop because they are the only part of it that judges a run by its
age.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django_weft.conf import weft_settings
from django_weft.engine.outcomes.finishing import AttemptReport
from django_weft.engine.worker.execution import Execution, report_of
from django_weft.engine.worker.inflight import InFlight
from django_weft.jobs.registry import registry
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.live.changes import Changes
from django_weft.models import RunStatus

logger = logging.getLogger("django_weft.worker")

#: Hands a report to the loop (the report queue's ``deliver``).
Deliver = Callable[[Execution | None, AttemptReport], None]


def deadline(job: str, version: int, started_at: datetime | None) -> datetime | None:
    """When an attempt of ``job`` ``version`` begun (claimed) at ``started_at`` passes the
    job's timeout, as the code deployed here has it; None if it has none, or the job is
    not deployed here."""
    deployed = registry.deployed(job, version)
    timeout = deployed.timeout if deployed is not None else None
    if not timeout or started_at is None:
        return None
    return started_at + timedelta(seconds=timeout)


class Timeouts:
    """The timeouts of the runs in flight, and the step that enforces them."""

    def __init__(self, in_flight: InFlight, deliver: Deliver) -> None:
        self._in_flight = in_flight
        self._deliver = deliver

    def moments(self) -> list[datetime]:
        """The next moment each execution's timeout asks something of the worker."""
        grace = timedelta(seconds=weft_settings.TIMEOUT_GRACE)
        return [
            execution.deadline + grace if execution.timed_out else execution.deadline
            for execution in self._in_flight
            if execution.deadline is not None and not execution.given_up
        ]

    def step(self, now: datetime, changes: Changes) -> bool:
        """Ask runs past their timeout to stop; give up on those that ignore it."""
        grace = timedelta(seconds=weft_settings.TIMEOUT_GRACE)
        worked = False
        for execution in self._in_flight:
            if execution.given_up or execution.deadline is None or now < execution.deadline:
                continue
            if not execution.timed_out:
                execution.timed_out = True
                execution.abort.set()
                logger.warning(
                    "%s run %s passed its timeout; asking it to stop",
                    execution.run.job,
                    execution.run.pk,
                )
                worked = True
            elif now >= execution.deadline + grace:
                self._give_up(execution)
                worked = True
        return worked

    def _give_up(self, execution: Execution) -> None:
        """Finish a run that ignored its timeout as lost, and free its slot."""
        run = execution.run
        self._in_flight.give_up(execution)
        message = (
            "the run passed its timeout and did not stop within"
            f" {weft_settings.TIMEOUT_GRACE:g}s of being asked; "
            + ("its process was killed" if execution.in_process else "its thread was abandoned")
        )
        logger.error("%s run %s: %s", run.job, run.pk, message)
        lost = report_of(execution, RunStatus.LOST, error=ErrorRecord("Timeout", message, ""))
        self._deliver(None, lost)

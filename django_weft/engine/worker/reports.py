"""The report queue: how attempts ended, handed from the run threads to the loop.

A run thread ends its attempt by delivering an
:class:`~django_weft.engine.outcomes.finishing.AttemptReport`; it writes nothing. The loop records
what is waiting, all of it in one transaction per round, and a report leaves the queue
only once that transaction has committed. While the database is down the reports simply
wait here, in memory, for the next round that reaches it: an outage costs time, never an
outcome. Two sides share the queue (threads append under a lock, the loop records and
removes), which is why it is a class of its own rather than a list inside the worker.

A run whose row another transaction holds locked (or whose finish hook waits past
``WEFT_LOCK_TIMEOUT`` for a row) is held back: its report waits for a later round, and
the others are recorded meanwhile. A locked row delays its own run, never the loop.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import DatabaseError, OperationalError, connection, transaction

from django_weft.engine.database.outages import gave_up_waiting
from django_weft.engine.outcomes.finishing import (
    AttemptReport,
    finish_plain,
    is_plain,
    record_attempt,
)
from django_weft.engine.outcomes.suspending import suspend
from django_weft.engine.worker.execution import Execution
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus

logger = logging.getLogger("django_weft.worker")

#: A delivered report, with the execution it ends (None for one the loop wrote itself:
#: a run given up on at its timeout or at shutdown).
Entry = tuple[Execution | None, AttemptReport]


@dataclass
class Recorded:
    """What one recording did, for the loop to know where to look next."""

    #: The executions whose report was recorded or discarded: no longer running here.
    done: list[Execution] = field(default_factory=list)
    #: Whether a report took the full finish (hook, schedule, retry) or ended a group's
    #: member, which may have queued runs to claim.
    finished_fully: bool = False
    #: The earliest retry those finishes set, if any.
    retry_at: datetime | None = None


class Reports:
    """Reports of ended attempts, oldest first, until the database has taken them."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._lock = threading.Lock()
        #: The entries (by ``id``) the last recording held back behind locked rows.
        self._held_back: set[int] = set()

    def __len__(self) -> int:
        return len(self._entries)

    def ready(self) -> bool:
        """Whether a report waits that the last recording did not hold back."""
        return any(id(entry) not in self._held_back for entry in self._entries)

    def deliver(self, execution: Execution | None, report: AttemptReport) -> None:
        """Queue ``report``; called from any thread."""
        with self._lock:
            self._entries.append((execution, report))

    def record(self, now: datetime, changes: Changes) -> Recorded | None:
        """Record the waiting reports in one transaction; None if none was waiting.

        The plain ones (no hook, schedule or retry) are one statement together; the others
        each take the full finish in a savepoint of their own. A database error leaves
        every one of them queued for the next round.
        """
        with self._lock:
            waiting = list(self._entries)
        if not waiting:
            return None
        recorded = Recorded()
        with transaction.atomic():
            locked = _locked_elsewhere({report.run_id for _, report in waiting})
            held_back: set[int] = {id(entry) for entry in waiting if entry[1].run_id in locked}
            plain = [
                entry
                for entry in waiting
                if id(entry) not in held_back
                and entry[0] is not None
                and not entry[0].given_up
                and is_plain(entry[1])
            ]
            if plain:
                finish_plain([report for _, report in plain], now=now, changes=changes)
                # The last member of a group starts its callback in that finish.
                if any(report.run is not None and report.run.group_id for _, report in plain):
                    recorded.finished_fully = True
            finished = {id(entry) for entry in plain} | held_back
            for entry in waiting:
                if id(entry) in finished:
                    continue
                execution, report = entry
                if execution is not None and execution.given_up:
                    logger.warning(
                        "late outcome of %s run %s (%s) discarded: the run was given up on",
                        report.job,
                        report.run_id,
                        report.status,
                    )
                    continue
                try:
                    retry_at = _record(report, now, changes)
                except OperationalError as error:
                    # Its finish (a savepoint) is rolled back; the round goes on.
                    if not gave_up_waiting(error):
                        raise
                    held_back.add(id(entry))
                    continue
                recorded.finished_fully = True
                if retry_at is not None:
                    recorded.retry_at = min(filter(None, (recorded.retry_at, retry_at)))
        done = {id(entry) for entry in waiting} - held_back
        with self._lock:
            self._entries = [entry for entry in self._entries if id(entry) not in done]
            newly_held, self._held_back = held_back - self._held_back, held_back
        for _, report in (entry for entry in waiting if id(entry) in newly_held):
            logger.info(
                "outcome of %s run %s (%s) waits: a row its finish writes is locked by "
                "another transaction",
                report.job,
                report.run_id,
                report.status,
            )
        for entry in waiting:
            if id(entry) in done and entry[0] is not None:
                recorded.done.append(entry[0])
        return recorded

    def describe(self) -> str:
        """The runs whose reports are waiting, and how they ended, for a log line."""
        with self._lock:
            entries = list(self._entries)
        return ", ".join(f"{report.run_id} ({report.status})" for _, report in entries)


def _locked_elsewhere(run_ids: set[uuid.UUID]) -> set[uuid.UUID]:
    """Of ``run_ids``, the runs whose rows another transaction holds locked now.

    This transaction locks the others (``FOR UPDATE SKIP LOCKED``), so that their
    finishes cannot wait; a run that is missing because it no longer exists is not
    locked (its finish finds that out). SQLite's single writer locks nothing by row.
    """
    if connection.vendor != "postgresql":
        return set()
    ours = set(
        Run.objects.filter(pk__in=run_ids)
        .select_for_update(skip_locked=True)
        .values_list("pk", flat=True)
    )
    missing = run_ids - ours
    if not missing:
        return set()
    return set(Run.objects.filter(pk__in=missing).values_list("pk", flat=True))


def _record(report: AttemptReport, now: datetime, changes: Changes) -> datetime | None:
    """Record one report, and return the retry (or wake) it set; one the database refuses for
    another reason than being away is recorded as a failure, so that it cannot block the
    reports behind it."""
    try:
        if report.status == RunStatus.WAITING:
            waiting = suspend(report, now=now, changes=changes)
            return waiting.wake_at if waiting is not None else None
        recorded = record_attempt(report, now=now, changes=changes)
    except DatabaseError:
        raise
    except Exception as error:
        logger.exception("could not record the outcome of %s run %s", report.job, report.run_id)
        failure = ErrorRecord(
            type(error).__name__,
            f"the outcome ({report.status}) could not be recorded: {error}",
            "",
        )
        failed = replace(report, status=RunStatus.FAILED, result=None, error=failure)
        record_attempt(failed, now=now, changes=changes)
        return None
    return recorded.retry_at if recorded is not None else None

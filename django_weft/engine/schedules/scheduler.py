"""The scheduler: arms new or edited rows and fires the rows that have come due.

``Scheduler.tick(now)`` is one step of the worker loop. It reads only the rows that
need it (unarmed rows, and armed rows whose ``next_due`` has passed, both behind
partial indexes), so its cost does not grow with the number of idle schedules.
Across processes a row is claimed with ``SELECT ... FOR UPDATE SKIP LOCKED`` where the
database has it, and always with a conditional update on ``next_due`` whose row count
says who won; the unique constraint on (schedule, due) is the last line of defence.

Every fire asks again whether the row's owner may start runs now (active, holding
``add_run``: :mod:`django_weft.access`), for the whole batch in one query where Django's
permissions decide. A row whose owner may not is parked as a row whose job is gone is:
its slots are skipped and counted missed, the reason is its ``problem``, and
``schedule_failed`` is sent once; its next slot asks again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, connection, transaction
from django.db.models import F

from django_weft import access
from django_weft.conf import weft_settings
from django_weft.engine.database import sql
from django_weft.engine.runs.starting import (
    Slot,
    StartRequest,
    insert_run,
    insert_runs_in_bulk,
    new_run,
    starts_in_bulk,
)
from django_weft.engine.schedules.saving import job_and_args
from django_weft.exceptions import InvalidArgs, StartRefused, UnknownJob
from django_weft.live.changes import Changes
from django_weft.models import CatchUp, LastStatus, Overlap, Run, RunStatus, Schedule
from django_weft.models.schedule import PLAN_FIELDS
from django_weft.signals import schedule_failed
from django_weft.timing.cron import CronError
from django_weft.timing.plans import Plan, slots_between

if TYPE_CHECKING:
    from django_weft.jobs.registry import Job

logger = logging.getLogger("django_weft.scheduler")

#: How many missed slots are counted, and at most made up, for one row in one tick.
MISSED_LIMIT = 10_000
CATCH_UP_LIMIT = 1_000
#: How soon a one-off that could not fire (unknown job, invalid args, an owner who may
#: not start runs) is looked at again.
PROBLEM_RETRY = timedelta(minutes=1)
#: ``schedule_failed``'s ``error_type`` for a row that cannot fire: its job or args, its plan.
UNSCHEDULABLE = "Unschedulable"
#: ``schedule_failed``'s ``error_type`` for a row parked because of its owner.
OWNER_MAY_NOT_START = "OwnerMayNotStart"


@dataclass(frozen=True)
class Firing:
    """A due row and what firing it does: the slots to start, where the row goes next."""

    row: Schedule
    fire: list[datetime]
    next_due: datetime | None
    missed: int
    #: What ``missed`` grows by: the missed slots, and the slots of a periodic row that
    #: cannot fire (its job is gone, its args no longer validate, its owner may not start).
    added_missed: int
    buffered: datetime | None
    problem: str
    #: ``schedule_failed``'s ``error_type`` when there is a ``problem``.
    problem_type: str
    job: Job | None
    args: dict[str, Any]


@dataclass(frozen=True)
class Decision:
    """What to do with a row that has come due: the slots to fire and where to go next."""

    fire: list[datetime]
    next_due: datetime | None
    missed: int


def decide(row: Schedule, now: datetime, grace: timedelta, window: timedelta) -> Decision:
    """Apply the catch-up policy to a row whose ``next_due`` is at or before ``now``."""
    due = row.next_due
    assert due is not None
    if row.at is not None:
        # A one-off fires once with the due it had, however late (and however often a
        # problem postponed the look at it).
        return Decision([row.at], None, 0)
    plan = row.plan(now)
    if now - due <= grace:
        following = plan.next_fire(due)
        return Decision([due], following.due if following else None, 0)
    upcoming = plan.next_fire(now)
    next_due = upcoming.due if upcoming else None
    if row.catch_up == CatchUp.LATEST:
        latest = _latest_slot(plan, due, now)
        missed = len(slots_between(plan, due, latest, MISSED_LIMIT)) - 1
        return Decision([latest], next_due, missed)
    # "all" makes up the slots in its window; "skip" still runs those within their
    # grace (back at 07:02 after two days down, the 07:00 digest runs, the two before
    # it are missed). Both start listing at that horizon, so a long outage of a busy
    # schedule costs only the slots that can still fire, plus a capped count.
    horizon = now - (window if row.catch_up == CatchUp.ALL else grace)
    first_recent = due if due >= horizon else _first_slot_after(plan, horizon)
    if first_recent is None or first_recent > now:
        recent, older = [], slots_between(plan, due, now, MISSED_LIMIT)
    else:
        recent = slots_between(plan, first_recent, now, MISSED_LIMIT)
        older = [
            s for s in slots_between(plan, due, first_recent, MISSED_LIMIT) if s < first_recent
        ]
    if row.catch_up == CatchUp.ALL:
        dropped = recent[:-CATCH_UP_LIMIT]
        return Decision(recent[-CATCH_UP_LIMIT:], next_due, len(older) + len(dropped))
    return Decision(recent, next_due, len(older))


def _first_slot_after(plan: Plan, moment: datetime) -> datetime | None:
    """The first slot at or after ``moment``."""
    fire = plan.next_fire(moment - timedelta(microseconds=1))
    return fire.due if fire is not None else None


def _latest_slot(plan: Plan, first: datetime, now: datetime) -> datetime:
    """The last slot at or before ``now``, found without walking from ``first``."""
    latest, span = first, timedelta(minutes=1)
    while now - span > latest:
        probe = plan.next_fire(now - span)
        if probe is not None and probe.due <= now:
            latest = max(latest, probe.due)
            break
        span *= 8
    while (following := plan.next_fire(latest)) is not None and following.due <= now:
        latest = following.due
    return latest


class Scheduler:
    """Arms and fires schedules; every method takes ``now`` and never reads a clock."""

    def __init__(self, *, batch_size: int = 100) -> None:
        self.batch_size = batch_size

    def tick(self, now: datetime, changes: Changes) -> bool:
        """Arm what needs arming and fire what is due; True if any row was handled."""
        armed = self.arm(now)
        fired = self.fire_due(now, changes)
        return armed or fired

    def next_due(self) -> datetime | None:
        return Schedule.objects.next_due()

    def arm(self, now: datetime) -> bool:
        rows = list(Schedule.objects.unarmed()[: self.batch_size])
        for row in rows:
            problem = ""
            try:
                due = row.first_due(now)
            except CronError as error:
                # A stored plan that no longer reads (an edit by raw SQL, a zone gone
                # from the tz database): parked until an edit re-arms it.
                due, problem = None, f"cannot be armed: {error}"
            # The plan fields in the filter make an edit made since the read win: that
            # row stays unarmed and is armed from its new plan in the next tick.
            won = Schedule.objects.filter(
                pk=row.pk,
                armed=False,
                **{name: getattr(row, name) for name in PLAN_FIELDS},
            ).update(armed=True, next_due=due, problem=problem)
            if won and problem:
                self._report_problem(row, problem, UNSCHEDULABLE)
            elif won:
                logger.info("armed %s (%s): next due %s", row.name, row.describe_plan(), due)
        return bool(rows)

    def fire_due(self, now: datetime, changes: Changes) -> bool:
        """Fire a batch of due rows in one transaction, set-based where the jobs allow.

        The rows' next slots are written in one statement, and the runs of jobs that
        start in bulk (no concurrency limit, no state) are inserted in one statement and
        recorded on their rows in one more; the other runs start one by one. Whether the
        rows' owners may start runs is asked once for the batch.
        """
        with transaction.atomic():
            due = Schedule.objects.due(now).select_related("owner")
            if connection.features.has_select_for_update_skip_locked:
                due = due.select_for_update(skip_locked=True, of=("self",))
            rows = list(due[: self.batch_size])
            may_start = access.owners_who_may_start(
                {row.owner for row in rows if row.owner is not None}
            )
            firings = [self._plan(row, now, may_start) for row in rows]
            won = self._move_on(firings)
            in_bulk: list[Firing] = []
            for firing in firings:
                row = firing.row
                if row.pk not in won:
                    logger.debug("schedule %s was fired by another process", row.name)
                    continue
                if firing.missed:
                    logger.info(
                        "schedule %s missed %d slot(s); next due %s",
                        row.name,
                        firing.missed,
                        firing.next_due,
                    )
                if firing.problem:
                    self._report_problem(row, firing.problem, firing.problem_type)
                elif firing.job is not None and starts_in_bulk(firing.job):
                    in_bulk.append(firing)
                else:
                    self._start_one_by_one(firing, now, changes)
            self._start_in_bulk(in_bulk, now, changes)
        return bool(firings)

    def _plan(self, row: Schedule, now: datetime, may_start: set[Any]) -> Firing:
        """What firing ``row`` at ``now`` does, decided in Python before anything is written.

        ``may_start`` holds the pks of the batch's owners who may start runs now.
        """
        decision = decide(
            row,
            now,
            row.grace if row.grace is not None else weft_settings.GRACE,
            row.catch_up_window
            if row.catch_up_window is not None
            else weft_settings.CATCH_UP_WINDOW,
        )
        fire, missed, buffered = self._apply_overlap(row, decision)
        problem, problem_type, job, args = "", "", None, row.args
        refusal = access.owner_refusal(row, may_start)
        if refusal:
            problem, problem_type = refusal, OWNER_MAY_NOT_START
        else:
            try:
                job, args = job_and_args(row)
            except (UnknownJob, InvalidArgs) as error:
                problem, problem_type = str(error), UNSCHEDULABLE
        next_due = decision.next_due
        added = missed
        if problem:
            if row.at is not None:
                # A one-off has no next slot to wait for: look again later, so that it
                # fires (with its own due) once the code or the row is fixed. It has
                # missed nothing (yet).
                next_due = now + PROBLEM_RETRY
            else:
                added += len(fire)
        return Firing(
            row, fire, next_due, missed, added, buffered, problem, problem_type, job, args
        )

    @staticmethod
    def _move_on(firings: list[Firing]) -> set[int]:
        """Write every row's next slot in one statement; returns the rows this process won.

        Conditional on the ``next_due`` each row was read with, so a row another process
        fired meanwhile (where ``SKIP LOCKED`` is not available) is left alone.
        """
        if not firings:
            return set()
        names = ("id", "next_due", "missed", "buffered_due", "problem", "next_due")
        values, params = sql.values_list(
            Schedule,
            names,
            (
                (f.row.pk, f.next_due, f.added_missed, f.buffered, f.problem, f.row.next_due)
                for f in firings
            ),
        )
        table = sql.table(Schedule)

        def column(name: str) -> str:
            return sql.column(Schedule, name)

        statement = (
            f"UPDATE {table} SET {column('next_due')} = v.column2, "
            f"{column('missed')} = {table}.{column('missed')} + v.column3, "
            f"{column('buffered_due')} = v.column4, {column('problem')} = v.column5 "
            f"FROM ({values}) AS v WHERE {table}.{column('id')} = v.column1 "
            f"AND {table}.{column('armed')} AND {table}.{column('next_due')} = v.column6 "
            f"RETURNING {table}.{column('id')}"
        )
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            return {row_id for (row_id,) in cursor.fetchall()}

    def _start_one_by_one(self, firing: Firing, now: datetime, changes: Changes) -> None:
        row, job = firing.row, firing.job
        assert job is not None
        for due in firing.fire:
            try:
                run = start_for_schedule(Slot(row, due), job, firing.args, now=now)
            except IntegrityError:
                logger.debug("slot %s of %s already fired", due, row.name)
                continue
            except StartRefused as error:
                self._record_refusal(row, due, now, error)
                continue
            changes.run(run.pk)
            logger.info("fired %s due %s as run %s", row.name, due.isoformat(), run.pk)

    @staticmethod
    def _start_in_bulk(firings: list[Firing], now: datetime, changes: Changes) -> None:
        """Insert the runs of ``firings`` at once and make each row's last one its last run."""
        runs: dict[tuple[int, datetime], Run] = {}
        for firing in firings:
            job = firing.job
            assert job is not None
            for due in firing.fire:
                runs[(firing.row.pk, due)] = new_run(
                    job,
                    firing.args,
                    owner=firing.row.owner,
                    slot=Slot(firing.row, due),
                    now=now,
                    priority=job.priority,
                )
        if not runs:
            return
        inserted = insert_runs_in_bulk(list(runs.values()))
        last: dict[int, Run] = {}
        for (row_id, due), run in runs.items():
            if run.pk not in inserted:
                logger.debug("slot %s of schedule %s already fired", due, row_id)
                continue
            changes.run(run.pk)
            logger.info("fired %s due %s as run %s", run.schedule, due.isoformat(), run.pk)
            last[row_id] = run  # fires come in due order: the latest wins
        if not last:
            return
        names = ("id", "last_due", "last_run")
        values, params = sql.values_list(
            Schedule, names, ((row_id, run.due, run.pk) for row_id, run in last.items())
        )
        table = sql.table(Schedule)

        def column(name: str) -> str:
            return sql.column(Schedule, name)

        started = sql.prep(Schedule, "last_started", now)
        statement = (
            f"UPDATE {table} SET {column('last_due')} = v.column2, "
            f"{column('last_run')} = v.column3, {column('last_started')} = %s, "
            f"{column('last_ended')} = NULL, {column('last_status')} = '{LastStatus.RUNNING}', "
            f"{column('last_error_type')} = '', {column('last_error_message')} = '' "
            f"FROM ({values}) AS v WHERE {table}.{column('id')} = v.column1"
        )
        with connection.cursor() as cursor:
            cursor.execute(statement, [started, *params])

    @staticmethod
    def _apply_overlap(
        row: Schedule, decision: Decision
    ) -> tuple[list[datetime], int, datetime | None]:
        """Hold back fires while the previous run is going, as the row's policy says."""
        fire, missed, buffered = decision.fire, decision.missed, row.buffered_due
        if not fire or row.last_status != LastStatus.RUNNING or row.overlap == Overlap.ALLOW:
            return fire, missed, buffered
        if row.overlap == Overlap.BUFFER_ONE and buffered is None:
            return [], missed + len(fire) - 1, fire[-1]
        return [], missed + len(fire), buffered

    @staticmethod
    def _report_problem(row: Schedule, problem: str, error_type: str) -> None:
        """Log and signal a row's problem, once: not again while the problem stays the same."""
        if problem == row.problem:
            return
        logger.error("schedule %s cannot fire: %s", row.name, problem)
        transaction.on_commit(
            lambda: schedule_failed.send(
                sender=Schedule, schedule=row, run=None, error_type=error_type, message=problem
            )
        )

    @staticmethod
    def _record_refusal(row: Schedule, due: datetime, now: datetime, error: StartRefused) -> None:
        """A refused start did not start: the slot is missed, the record says why.

        A one-off is looked at again later (it fires once its start is allowed).
        """
        error_type, message = type(error).__name__, str(error)
        retry = {"next_due": now + PROBLEM_RETRY} if row.at is not None else {}
        Schedule.objects.filter(pk=row.pk).update(
            last_due=due,
            last_status=LastStatus.FAILED,
            last_error_type=error_type,
            last_error_message=message,
            missed=F("missed") + (0 if retry else 1),
            **retry,
        )
        logger.warning("schedule %s could not start its run: %s", row.name, message)
        transaction.on_commit(
            lambda: schedule_failed.send(
                sender=Schedule, schedule=row, run=None, error_type=error_type, message=message
            )
        )


def start_for_schedule(slot: Slot, job: Job, args: dict[str, Any], *, now: datetime) -> Run:
    """Start the run of ``slot`` with the schedule's validated ``args``; make it the row's
    last run.

    Inside the caller's transaction; the (schedule, due) unique constraint refuses a
    slot that already fired with an ``IntegrityError``.
    """
    schedule = slot.schedule
    with transaction.atomic():
        run = insert_run(StartRequest(job, args, owner=schedule.owner), now=now, slot=slot)
    Schedule.objects.filter(pk=schedule.pk).update(
        last_due=slot.due,
        last_started=now,
        last_ended=None,
        last_status=LastStatus.RUNNING,
        last_error_type="",
        last_error_message="",
        last_run=run,
    )
    return run


def run_now(schedule: Schedule, *, now: datetime) -> Run:
    """Start a run of ``schedule``'s job now, outside its plan (the admin's *run now*).

    The run is the schedule owner's, so it is refused
    (:class:`~django_weft.exceptions.StartRefused`) while that owner may not start runs,
    as a fire would be. The args are validated again; the run's due is ``now``. The plan
    is untouched.
    """
    _refuse_for_owner(schedule)
    with transaction.atomic():
        return start_for_schedule(Slot(schedule, now), *job_and_args(schedule), now=now)


def _refuse_for_owner(schedule: Schedule) -> None:
    """Raise :class:`~django_weft.exceptions.StartRefused` while ``schedule``'s owner may
    not start runs."""
    refusal = access.schedule_owner_refusal(schedule)
    if refusal:
        raise StartRefused(f"schedule {schedule.name} does not start runs: {refusal}")


def record_on_schedule(run: Run, now: datetime, changes: Changes) -> None:
    """Carry a run's outcome to its schedule's last-run record, and start a buffered fire.

    Called by the finish step, inside its transaction.
    """
    ok = run.status == RunStatus.DONE
    schedule_id = run.schedule_id
    assert schedule_id is not None
    Schedule.objects.filter(pk=schedule_id, last_run=run).update(
        last_ended=now,
        last_status=LastStatus.OK if ok else LastStatus.FAILED,
        last_error_type="" if ok else run.error_type or str(run.status),
        last_error_message="" if ok else run.error_message or f"the run was {run.status}",
    )
    schedule = (
        Schedule.objects.select_for_update()
        .filter(pk=schedule_id, buffered_due__isnull=False)
        .first()
    )
    if schedule is None:
        return
    due = schedule.buffered_due
    assert due is not None
    Schedule.objects.filter(pk=schedule.pk).update(buffered_due=None)
    try:
        if not schedule.enabled:
            raise StartRefused("the schedule was disabled while the fire waited")
        _refuse_for_owner(schedule)
        changes.run(start_for_schedule(Slot(schedule, due), *job_and_args(schedule), now=now).pk)
    except (UnknownJob, InvalidArgs, StartRefused, IntegrityError) as error:
        # The buffered slot is lost, not the outcome being recorded with it.
        logger.error("buffered fire of %s due %s dropped: %s", schedule, due, error)
        Schedule.objects.filter(pk=schedule.pk).update(missed=F("missed") + 1)


__all__ = ["Decision", "Scheduler", "decide", "record_on_schedule", "run_now", "start_for_schedule"]

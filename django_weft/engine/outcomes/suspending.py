"""The end of an attempt that waits: its run becomes ``waiting`` and holds no worker.

A job that sleeps until a moment or waits for a signal raises
:class:`~django_weft.jobs.durable.Suspended`; its worker reports the attempt
``waiting`` (see :class:`~django_weft.engine.outcomes.finishing.AttemptReport`), and
:func:`suspend` records it, in one transaction, under the claim that held the run, as a
finish is. Three things can already be true then, and each is settled in that
transaction rather than left for later:

- the signal it waits for was sent before (kept, see
  :mod:`~django_weft.engine.flows.signals`): the run is queued again at once, to receive it;
- its moment has already come: queued again at once;
- an abort was requested while it ran: the run ends ``aborted``, as a waiting run that
  is aborted does.

A sender locks the run's row before it looks at the run (:func:`~django_weft.engine.flows.
signals.send_signal`), and this transaction holds that lock from its first write: a
signal sent at the same moment is either seen here or sees the run ``waiting`` and wakes
it. Nothing is lost in between, on either database.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction

from django_weft.engine.outcomes.finishing import AttemptReport, finish, log_late, owned
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus, Signal

logger = logging.getLogger("django_weft.runs")


def suspend(report: AttemptReport, *, now: datetime, changes: Changes) -> Run | None:
    """Record that ``report``'s attempt ended in a wait; the run as recorded, or None
    when the report came too late (the run is someone else's now)."""
    with transaction.atomic():
        won = owned(report.run_id, report.claim).update(
            status=RunStatus.WAITING,
            worker=None,
            wake_at=report.wake_at,
            awaiting=report.awaiting,
        )
        if not won:
            log_late(report.run_id, report.claim)
            return None
        changes.run(report.run_id)
        run = Run.objects.get(pk=report.run_id)
        if run.abort_requested_at is not None:
            finish(run.pk, RunStatus.ABORTED, now=now, changes=changes)
            return Run.objects.get(pk=run.pk)
        if _may_go_on(run, now):
            Run.objects.filter(pk=run.pk).update(
                status=RunStatus.QUEUED, resuming=True, wake_at=None, awaiting=""
            )
            run.refresh_from_db()
    logger.info(
        "%s run %s waits for %s%s",
        report.job,
        report.run_id,
        f'signal "{report.awaiting}"' if report.awaiting else "a moment",
        f" until {report.wake_at.isoformat()}" if report.wake_at is not None else "",
    )
    return run


def _may_go_on(run: Run, now: datetime) -> bool:
    """Whether what ``run`` waits for is already there: its moment, or its signal."""
    if run.wake_at is not None and run.wake_at <= now:
        return True
    return bool(run.awaiting) and (
        Signal.objects.filter(run=run, name=run.awaiting, received_at__isnull=True).exists()
    )

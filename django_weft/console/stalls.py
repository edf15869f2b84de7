"""Why a queued run is not running yet, besides the flow limits that hold it back
(:mod:`django_weft.engine.limits.reasons`) and a job no worker has (its *blocked*
phase): its queue is paused, it may not begin yet (a retry's delay, a task's
``run_after``), no worker is running, or every running worker is quiet.

Each is one question to rows every worker reads too, so the page answers "why is this
stuck" with what the workers see. A busy worker pool (every slot taken) is not named:
it is the ordinary wait, which the queue's lag on the overview shows.
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

from django.utils.translation import gettext as _

from django_weft.conf import weft_settings
from django_weft.console.formatting import moment
from django_weft.models import PausedQueue, Run, RunStatus, WorkerProcess


def stalls(run: Run, now: datetime, zone: tzinfo) -> list[str]:
    """What keeps ``run`` from being claimed now, in sentences; none unless it is queued."""
    if run.status != RunStatus.QUEUED:
        return []
    found = []
    if PausedQueue.objects.filter(queue=run.queue).exists():
        found.append(
            _("Its queue %(queue)s is paused: no worker claims its runs until it is resumed.")
            % {"queue": run.queue}
        )
    if run.retry_at is not None and run.retry_at > now:
        found.append(
            _("Its retry waits until %(moment)s.") % {"moment": moment(run.retry_at, zone)}
        )
    if run.run_after is not None and run.run_after > now:
        found.append(
            _("It may not begin before %(moment)s.") % {"moment": moment(run.run_after, zone)}
        )
    alive = WorkerProcess.objects.filter(
        stopped_at__isnull=True,
        last_beat__gte=now - timedelta(seconds=weft_settings.LOST_AFTER),
    )
    if not alive.exists():
        found.append(_("No worker is running: start one with manage.py runjobs."))
    elif not alive.filter(quiet=False).exists():
        found.append(_("Every running worker is quiet: resume one, or start another."))
    return found

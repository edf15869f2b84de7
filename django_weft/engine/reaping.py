"""Lost runs: runs whose worker stopped beating are finished ``lost`` (or retried) once.

Any worker may do this for any other; the conditional finish makes sure each lost
attempt is recorded once, however many workers notice it at the same time.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from django_weft.engine.finishing import AttemptReport, record_attempt
from django_weft.jobs.tracebacks import ErrorRecord
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus, WorkerProcess

WORKER_LOST = ErrorRecord("WorkerLost", "the worker running it stopped beating", "")


def finish_lost(*, now: datetime, silent_since: datetime, changes: Changes) -> int:
    """Finish as lost (or retry, as the job allows) every running run no live worker holds.

    That is a run whose worker stopped beating before ``silent_since``, whose worker row
    says it stopped, or whose worker row is gone. Returns how many attempts it ended.
    """
    silent = list(WorkerProcess.objects.silent_since(silent_since).values_list("pk", flat=True))
    lost = (
        Run.objects.filter(status=RunStatus.RUNNING)
        .filter(Q(worker__in=silent) | Q(worker__isnull=True) | Q(worker__stopped_at__isnull=False))
        .values_list("pk", "job", "worker_id", "attempt", "started_at")
    )
    ended = 0
    for run_id, job, worker_id, attempt, started_at in list(lost):
        report = AttemptReport(
            run_id=run_id,
            job=job,
            worker_id=worker_id,
            attempt=attempt,
            started_at=started_at,
            status=RunStatus.LOST,
            error=WORKER_LOST,
        )
        if record_attempt(report, now=now, changes=changes) is not None:
            ended += 1
    # Marked stopped only now: a worker that wakes up finds its row stopped and knows its
    # runs were taken (see Worker's heartbeat).
    WorkerProcess.objects.filter(pk__in=silent, stopped_at__isnull=True).update(stopped_at=now)
    return ended

"""The claim: a worker takes queued runs it can execute, each once.

A claimed run is ``running`` on that worker with its attempt number raised by one; only
that worker (and attempt) may finish it (see :mod:`django_weft.finishing`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import connection, transaction
from django.db.models import F, Q

from django_weft import live
from django_weft.models import Run, RunStatus, WorkerProcess

if TYPE_CHECKING:
    from django_weft.jobs import Job


def claim(
    jobs: Iterable[Job],
    *,
    limit: int,
    worker: WorkerProcess,
    now: datetime,
    queues: Iterable[str] | None,
) -> list[Run]:
    """Mark up to ``limit`` queued runs as running on ``worker`` and return them.

    A run waiting for a retry is not claimed before its ``retry_at``.
    """
    with transaction.atomic():
        queued = Run.objects.claimable(jobs, queues).filter(
            Q(retry_at__isnull=True) | Q(retry_at__lte=now)
        )
        if connection.features.has_select_for_update_skip_locked:
            queued = queued.select_for_update(skip_locked=True)
        ids = list(queued.values_list("pk", flat=True)[:limit])
        if not ids:
            return []
        Run.objects.filter(pk__in=ids, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING,
            worker=worker,
            started_at=now,
            retry_at=None,
            attempt=F("attempt") + 1,
            error_type="",
            error_message="",
            error_traceback="",
        )
        claimed = list(
            Run.objects.filter(pk__in=ids, status=RunStatus.RUNNING, worker=worker)
            .select_related("state")
            .order_by("created_at")
        )
        for run in claimed:
            live.run_changed(run.pk)
        return claimed

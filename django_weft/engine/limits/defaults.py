"""The flow limits jobs declare in code, written as rows where none of their name is."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django_weft.jobs.registry import Job
from django_weft.models import FlowLimit


def write_defaults(jobs: Iterable[Job], now: datetime) -> None:
    """Write a row for each limit ``jobs`` declare that has no row of its name yet; a row
    that exists (an operator's edit, another deploy's) is left as it is."""
    rows = [
        FlowLimit(
            name=limit.name,
            job=job.name,
            per_key=limit.per_key,
            concurrency=limit.concurrency,
            rate=limit.rate,
            period=limit.per,
            updated_at=now,
        )
        for job in jobs
        for limit in job.limits
    ]
    if rows:
        FlowLimit.objects.bulk_create(rows, ignore_conflicts=True)

"""Debounce and throttle: a job's starts paced per key, decided in the start's
transaction, under the lock that makes starts of one job and key take turns
(:func:`~django_weft.engine.runs.starting.serialize_starts`).

A run's key is what its job's ``concurrency_key`` gives (``""`` without one). A
schedule's fire and a retry are not paced: a schedule's plan is its own pacing, and a
retry is an operator's or a policy's decision about a run that already started.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django_weft.exceptions import Throttled
from django_weft.jobs.registry import Job
from django_weft.models import Run, RunStatus

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


def paced(job: Job) -> bool:
    return job.debounce is not None or job.throttle is not None


def check_throttle(job: Job, key: str, now: datetime) -> None:
    """Refuse a start of ``job`` and ``key`` within its throttle of the last one
    (:class:`~django_weft.exceptions.Throttled`, saying when the next may start)."""
    if job.throttle is None:
        return
    last = (
        Run.objects.filter(
            job=job.name,
            concurrency_key=key,
            created_at__gt=now - job.throttle,
            retry_of__isnull=True,
        )
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    if last is not None:
        raise Throttled(job.name, key, job.throttle, last + job.throttle)


def debounced(
    job: Job, key: str, stored: Mapping[str, Any], owner: AbstractBaseUser | None, now: datetime
) -> Run | None:
    """The queued run of ``job`` and ``key`` (started by ``owner``, still in its debounce
    window) that this start joins: its args become ``stored`` and its begin is pushed
    back by the debounce. None when there is none (the start then makes a run that waits
    out the window). Only the same owner's runs merge: another user's args never run
    as the first starter."""
    if job.debounce is None:
        return None
    found = Run.objects.filter(
        job=job.name,
        concurrency_key=key,
        status=RunStatus.QUEUED,
        retry_at__gt=now,
        idempotency_key__isnull=True,
        group__isnull=True,
        workflow__isnull=True,
    )
    if owner is not None:
        found = found.filter(owner=cast(Any, owner))  # AUTH_USER_MODEL, whatever class
    else:
        found = found.filter(owner__isnull=True)
    run = found.order_by("created_at", "pk").first()
    if run is None:
        return None
    until = now + job.debounce
    merged = Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED, retry_at__gt=now).update(
        args=dict(stored), run_after=until, retry_at=until
    )
    if not merged:
        return None  # claimed as its window ended: this start makes a run of its own
    run.refresh_from_db()
    return run

"""Starting and aborting runs from trusted Python code, with the live views told.

Your own code (a view that already checked who may do it, a management command, a
shell) starts runs here. The steps themselves live in :mod:`django_weft.starting` and
:mod:`django_weft.finishing`; this module adds the publishing after the commit. Code
acting for a user whose rights must be checked goes through
:mod:`django_weft.operations` instead, as the admin, the API and the sockets do.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from django_weft import finishing, live, starting
from django_weft.changes import Changes
from django_weft.jobs import Job, registry
from django_weft.models import Run

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

__all__ = ["aabort", "abort", "astart", "start", "start_or_get"]


def start(
    job: Job | str,
    args: Mapping[str, Any] | None = None,
    *,
    key: str | None = None,
    owner: AbstractBaseUser | None = None,
    priority: int | None = None,
    now: datetime | None = None,
) -> Run:
    """Start a run of ``job`` (a job or its name) and return it at once, queued.

    Raises :class:`~django_weft.exceptions.UnknownJob`,
    :class:`~django_weft.exceptions.InvalidArgs` and
    :class:`~django_weft.exceptions.StartRefused` (concurrency limit, reused key); then
    nothing is written. With ``key`` a resent start returns the run the first one made
    (keys are the owner's own: two owners' equal keys name two runs).
    """
    return start_or_get(job, args, key=key, owner=owner, priority=priority, now=now)[0]


def start_or_get(
    job: Job | str,
    args: Mapping[str, Any] | None = None,
    *,
    key: str | None = None,
    owner: AbstractBaseUser | None = None,
    priority: int | None = None,
    now: datetime | None = None,
) -> tuple[Run, bool]:
    """Like :func:`start`; also says whether this call made the run (False: ``key``
    named a run an earlier start made)."""
    chosen = registry.get(job) if isinstance(job, str) else job
    run, created = starting.start_or_get(
        chosen, args, key=key, owner=owner, now=now, priority=priority
    )
    changes = Changes()
    changes.run(run.pk)
    live.publish(changes)
    return run, created


astart = sync_to_async(start)


def abort(run: Run, *, now: datetime | None = None) -> bool:
    """Request an abort. A run no worker has claimed (queued or blocked) ends at once.

    Returns False when the run had already finished, or its abort was requested before.
    """
    changes = Changes()
    requested = finishing.abort(run, now=now or timezone.now(), changes=changes)
    live.publish(changes)
    return requested


aabort = sync_to_async(abort)

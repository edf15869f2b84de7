"""Pausing and resuming a queue for every worker, checked and on record."""

from __future__ import annotations

from typing import Any, cast

from django.db import transaction
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.models import (
    AuditAction,
    PausedQueue,
)
from django_weft.operations.base import record, require
from django_weft.timing import clocks


def pause_queue_for(user: User, queue: str) -> bool:
    """Pause ``queue`` for every worker; False when it was paused already."""
    require(
        user.has_perm(access.PAUSE_QUEUE),
        _("pause queue %(queue)s") % {"queue": queue},
        access.PAUSE_QUEUE,
    )
    with transaction.atomic():
        paused, created = PausedQueue.objects.get_or_create(
            queue=queue,
            defaults={
                "paused_at": clocks.now(),
                "paused_by": cast(Any, user) if user.is_authenticated else None,
            },
        )
        if created:
            record(user, AuditAction.QUEUE_PAUSE, paused, text="Paused")
    return created


def resume_queue_for(user: User, queue: str) -> bool:
    """Resume ``queue``; False when it was not paused."""
    require(
        user.has_perm(access.PAUSE_QUEUE),
        _("resume queue %(queue)s") % {"queue": queue},
        access.PAUSE_QUEUE,
    )
    with transaction.atomic():
        paused = PausedQueue.objects.select_for_update().filter(queue=queue).first()
        if paused is None:
            return False
        record(user, AuditAction.QUEUE_RESUME, paused, text="Resumed")
        paused.delete()
    return True

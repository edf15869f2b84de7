"""Quieting a worker process and resuming it, checked and on record.

A quiet worker claims no new runs and fires no schedules; it finishes the runs it holds,
keeps beating, keeps their timeouts and reaps dead workers as before. The flag is a
column of its row, which the worker reads at each heartbeat, so it takes effect within
``WEFT_HEARTBEAT_INTERVAL`` on whatever host the worker runs, and a worker declared dead
and registered again stays quiet. ``runjobs`` itself never sets it.
"""

from __future__ import annotations

import uuid

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.models import AuditAction, WorkerProcess
from django_weft.operations.base import record, require


def quiet_worker_for(user: User, worker_id: uuid.UUID | str, *, quiet: bool = True) -> bool:
    """Quiet (or, with ``quiet=False``, resume) the worker process ``worker_id``; False
    when it was so already. A worker that has stopped is refused: it takes no work."""
    what = _("quiet worker %(worker)s") if quiet else _("resume worker %(worker)s")
    require(user.has_perm(access.QUIET_WORKER), what % {"worker": worker_id}, access.QUIET_WORKER)
    with transaction.atomic():
        worker = WorkerProcess.objects.select_for_update().filter(pk=worker_id).first()
        if worker is None:
            raise ValidationError(_("No worker process %(worker)s.") % {"worker": worker_id})
        if worker.stopped_at is not None:
            raise ValidationError(
                _("Worker %(worker)s has stopped: it takes no work to quiet or resume.")
                % {"worker": worker}
            )
        if worker.quiet == quiet:
            return False
        worker.quiet = quiet
        worker.save(update_fields=["quiet"])
        if quiet:
            record(user, AuditAction.WORKER_QUIET, worker, text="Quieted")
        else:
            record(user, AuditAction.WORKER_RESUME, worker, text="Resumed")
    return True

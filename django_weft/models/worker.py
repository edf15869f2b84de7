from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models


class WorkerProcessQuerySet(models.QuerySet["WorkerProcess"]):
    def silent_since(self, moment: datetime) -> WorkerProcessQuerySet:
        """Processes that have not beaten since ``moment`` and did not stop cleanly."""
        return self.filter(stopped_at__isnull=True, last_beat__lt=moment)


class WorkerProcess(models.Model):
    """One ``runjobs`` process; its heartbeat tells the others it still owns its runs."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    last_beat = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)
    quiet = models.BooleanField(
        default=False,
        help_text="Takes no new work, finishes what it holds; read at its next heartbeat.",
    )

    objects = WorkerProcessQuerySet.as_manager()

    class Meta:
        verbose_name = "worker process"
        verbose_name_plural = "worker processes"
        permissions = [("quiet_workerprocess", "Can quiet and resume worker processes")]
        indexes = [
            models.Index(
                fields=["last_beat"],
                name="weft_worker_alive",
                condition=models.Q(stopped_at__isnull=True),
            )
        ]

    def __str__(self) -> str:
        return f"{self.hostname}:{self.pid}"

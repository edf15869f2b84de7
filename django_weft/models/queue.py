from __future__ import annotations

from django.conf import settings
from django.db import models


class PausedQueue(models.Model):
    """A queue no worker claims from, while this row exists.

    Queues are names on runs, not rows; pausing one writes this row and resuming deletes
    it, so every worker honours it at its next claim, whatever host it runs on.
    """

    queue = models.CharField(max_length=100, unique=True)
    paused_at = models.DateTimeField()
    paused_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["queue"]
        verbose_name = "paused queue"
        permissions = [("pause_queue", "Can pause and resume queues")]

    def __str__(self) -> str:
        return self.queue

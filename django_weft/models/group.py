"""A group of runs (fan-out) and what starts when the last of them ends (fan-in).

The counters are the group's own, kept in the finish transaction of each member (under
the group's row lock), so that "the last member ended" is a fact one transaction learns,
exactly once, without counting the members.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class GroupCondition(models.TextChoices):
    ALL_ENDED = "all_ended", "all ended"
    """The callback starts when every member has ended, whatever its outcome."""
    ALL_DONE = "all_done", "all done"
    """The callback starts if every member ended ``done``; else the failure callback."""


class Group(models.Model):
    """Runs started together, and the callback that starts when the last of them ends.

    A group is *open* until it is sealed: members may be added in batches (a fan-out
    built a page at a time), and no callback starts before the seal, however many
    members ended. ``unfinished`` counts the members that have not ended; the outcome
    counters count those that have.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200, blank=True, help_text="What the group is for.")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who started it; its members and callback are theirs.",
    )
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    condition = models.CharField(
        max_length=10, choices=GroupCondition.choices, default=GroupCondition.ALL_ENDED
    )
    callback_job = models.CharField(max_length=200, blank=True)
    callback_args = models.JSONField(default=dict, blank=True)
    failure_job = models.CharField(
        max_length=200, blank=True, help_text="With all_done: started instead when one failed."
    )
    failure_args = models.JSONField(default=dict, blank=True)
    callback_run = models.OneToOneField(
        "django_weft.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="called_back_by",
        help_text="The run its end started (the callback, or the failure one).",
    )
    created_at = models.DateTimeField()
    sealed_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    total = models.PositiveIntegerField(default=0)
    unfinished = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    aborted = models.PositiveIntegerField(default=0)
    lost = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["idempotency_key"],
                name="weft_group_idempotency_key",
                condition=models.Q(idempotency_key__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return f"group {self.name or self.pk}"

    @property
    def is_sealed(self) -> bool:
        return self.sealed_at is not None

    @property
    def has_ended(self) -> bool:
        return self.ended_at is not None

    def summary(self) -> dict[str, int]:
        """The counts a callback reads: members in all, unfinished, and by outcome."""
        return {
            "total": self.total,
            "unfinished": self.unfinished,
            "done": self.done,
            "failed": self.failed,
            "aborted": self.aborted,
            "lost": self.lost,
        }

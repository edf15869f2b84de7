"""What a run remembers across its attempts: the results of its durable steps and waits
(:class:`StepRecord`), and the signals sent to it (:class:`Signal`).

A run's function runs from the top at every attempt and after every wait; a step that
completed once answers from its record instead of running again, so a retried checkout
does not charge the card twice. Records and signals go with their run.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class StepKind(models.TextChoices):
    STEP = "step", "step"
    """``ctx.step(name, ...)``: ``result`` is what the step's function returned."""
    SLEEP = "sleep", "sleep"
    """``ctx.sleep_until``/``sleep_for``: ``result`` holds the moment it ends (``until``)."""
    SIGNAL = "signal", "wait for a signal"
    """``ctx.wait_for``: ``result`` holds its timeout's moment (``until``), then the
    signal's ``payload`` once received, or ``timed_out``."""


class StepRecord(models.Model):
    """What one durable step (``ctx.step``) or wait (``ctx.sleep_until``, ``ctx.wait_for``)
    of a run recorded, the first time it came to it.

    A step's record is written once, when its function returned. A wait's is written when
    the run first comes to it (so that a run resumed later does not wait again from the
    start) and completed when it ends. Steps are named by the job; waits by their order
    in the run (the second wait for ``approval`` is ``approval#2``).
    """

    run = models.ForeignKey("django_weft.Run", on_delete=models.CASCADE, related_name="steps")
    kind = models.CharField(max_length=8, choices=StepKind.choices, default=StepKind.STEP)
    name = models.CharField(max_length=200, help_text="Unique in its run, for its kind.")
    result = models.JSONField(null=True, blank=True)
    attempt = models.PositiveIntegerField(help_text="The attempt that recorded it.")
    recorded_at = models.DateTimeField()

    class Meta:
        ordering = ["run", "recorded_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["run", "kind", "name"], name="weft_step_once_per_run")
        ]

    def __str__(self) -> str:
        return f"step {self.name} of run {self.run_id}"


class Signal(models.Model):
    """A named message sent to a run (``ctx.wait_for(name)`` receives it).

    Kept until a wait receives it, so a signal sent before the run waits for it is not
    lost; each is received once, by the first wait for its name (oldest first).
    """

    run = models.ForeignKey("django_weft.Run", on_delete=models.CASCADE, related_name="signals")
    name = models.CharField(max_length=100)
    payload = models.JSONField(null=True, blank=True)
    sent_at = models.DateTimeField()
    sent_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    received_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "sent_at", "pk"]
        indexes = [
            # A wait looks for the oldest signal of its name its run has not received.
            models.Index(
                fields=["run", "name", "sent_at"],
                name="weft_signal_unreceived",
                condition=models.Q(received_at__isnull=True),
            )
        ]

    def __str__(self) -> str:
        return f"signal {self.name} to run {self.run_id}"

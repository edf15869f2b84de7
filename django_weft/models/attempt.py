from __future__ import annotations

from django.db import models

from django_weft.models.run import RunStatus


class Attempt(models.Model):
    """An earlier attempt of a run: one that ended ``failed`` or ``lost`` and was retried.

    The run's own row records its latest attempt (``attempt``, ``started_at``, the error
    fields), so a run that succeeds at once costs no row here; each retry moves the attempt
    that ended into this table first, with the output it left.
    """

    run = models.ForeignKey("django_weft.Run", on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    worker = models.ForeignKey(
        "django_weft.WorkerProcess",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    status = models.CharField(max_length=16, choices=RunStatus.choices)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField()
    error_type = models.CharField(max_length=200, blank=True)
    error_class_path = models.CharField(max_length=300, blank=True)
    error_message = models.TextField(blank=True)
    error_traceback = models.TextField(blank=True)
    output = models.TextField(
        blank=True,
        help_text="The run's output as this attempt left it (its state's output, bounded as "
        "the run's is): the next attempt writes its own over the run's.",
    )

    class Meta:
        ordering = ["run", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="weft_attempt_one_per_number")
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of run {self.run_id} ({self.status})"

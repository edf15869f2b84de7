"""A workflow: a graph of steps, each a run, started together and ended as one.

A step's run is ``waiting`` until every step it depends on has ended. ``pending`` counts
those not ended yet, kept in the finish transaction of each of them (under the step's
row lock), so that "the last dependency ended" is a fact one transaction learns, exactly
once. ``unfinished`` on the workflow does the same for its end.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class WorkflowStatus(models.TextChoices):
    RUNNING = "running", "running"
    """Some step has not ended yet."""
    DONE = "done", "done"
    """Every step ended ``done``."""
    FAILED = "failed", "failed"
    """Every step ended, and some step did not end ``done`` (failed, lost or cancelled)."""
    ABORTED = "aborted", "aborted"
    """An abort was requested and every step has ended."""


class Workflow(models.Model):
    """One start of a workflow defined in code (see :mod:`django_weft.jobs.workflows`).

    The definition's name and version are kept, as a run keeps its job's: the steps and
    their dependencies are copied into :class:`WorkflowStep` rows when it starts, so a
    deploy that changes the definition never changes a workflow already under way.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200, help_text="The workflow's registered name.")
    version = models.PositiveIntegerField(default=1)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who started it; its steps' runs are theirs.",
    )
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    args = models.JSONField(default=dict, blank=True, help_text="The args it was started with.")
    status = models.CharField(
        max_length=10, choices=WorkflowStatus.choices, default=WorkflowStatus.RUNNING
    )
    created_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    abort_requested_at = models.DateTimeField(null=True, blank=True)
    total = models.PositiveIntegerField(default=0, help_text="Its steps.")
    unfinished = models.PositiveIntegerField(default=0, help_text="Its steps not ended yet.")
    callback_run = models.ForeignKey(
        "django_weft.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The run of the definition's on_end job its last end started.",
    )

    class Meta:
        ordering = ["-created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["idempotency_key"],
                name="weft_workflow_idempotency_key",
                condition=models.Q(idempotency_key__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return f"workflow {self.name} {self.pk}"

    @property
    def has_ended(self) -> bool:
        return self.ended_at is not None


class WorkflowStep(models.Model):
    """A step of a started workflow, and the run that does it now (a retried step
    points at its newest run; the earlier ones keep their ``workflow``).

    A step that ``fans_out`` (a group step) runs ``job`` once for each item of its
    group; its own run is the gathering one (``weft.gather``), waiting until the group's
    members have ended. ``members`` keeps their ids in the items' order, so that the
    gathered results come in that order however the members finished.
    """

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="steps")
    name = models.CharField(max_length=100)
    position = models.PositiveIntegerField(help_text="Its place in the definition.")
    job = models.CharField(max_length=200)
    depends_on = models.JSONField(default=list, blank=True, help_text="The steps' names.")
    runs_anyway = models.BooleanField(
        default=False, help_text="Runs when its dependencies ended, whatever their outcome."
    )
    pending = models.PositiveIntegerField(
        default=0, help_text="Its dependencies that have not ended yet."
    )
    run = models.OneToOneField(
        "django_weft.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="workflow_step",
    )
    fans_out = models.BooleanField(
        default=False, help_text="Runs its job once for each item of a group."
    )
    group = models.OneToOneField(
        "django_weft.Group",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="workflow_step",
        help_text="The group a step that fans out started, once its dependencies ended.",
    )
    members = models.JSONField(
        default=list, blank=True, help_text="Its group's runs' ids, in the items' order."
    )

    class Meta:
        ordering = ["workflow", "position"]
        constraints = [
            models.UniqueConstraint(fields=["workflow", "name"], name="weft_workflow_step_name")
        ]

    def __str__(self) -> str:
        return f"step {self.name} of {self.workflow_id}"

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models


class AuditAction(models.TextChoices):
    """What an operator did; the label is what the console's filter lists."""

    START = "start", "start a run"
    """A user started a run (``start_for``); the record is about the new run."""
    ABORT = "abort", "abort a run"
    """An abort of a run was requested."""
    RETRY = "retry", "retry a run"
    """A finished run was retried; ``details['run']`` is the new run."""
    RUN_DELETE = "run_delete", "delete a run"
    """A finished run was deleted; the record keeps its id and what it was."""
    RUN_NOW = "run_now", "run a schedule now"
    """A schedule was run now; ``details['run']`` is the run it started."""
    SCHEDULE_CREATE = "schedule_create", "create a schedule"
    """A schedule was created."""
    SCHEDULE_EDIT = "schedule_edit", "edit a schedule"
    """A schedule was changed; ``changed`` names its fields."""
    SCHEDULE_ENABLE = "schedule_enable", "enable a schedule"
    """A disabled schedule was switched on."""
    SCHEDULE_DISABLE = "schedule_disable", "disable a schedule"
    """An enabled schedule was switched off."""
    SCHEDULE_DELETE = "schedule_delete", "delete a schedule"
    """A schedule was deleted (the record keeps its id and name)."""
    QUEUE_PAUSE = "queue_pause", "pause a queue"
    """A queue was paused for every worker."""
    QUEUE_RESUME = "queue_resume", "resume a queue"
    """A paused queue was resumed."""
    WORKER_QUIET = "worker_quiet", "quiet a worker"
    """A worker process was told to claim no new runs and fire no schedules."""
    WORKER_RESUME = "worker_resume", "resume a worker"
    """A quiet worker process was told to take work again."""
    DOCUMENT_CHANGE = "document_change", "change a document"
    """A user's change of a document; ``details['revision']`` is the new one."""
    MODULE_EDIT = "module_edit", "edit a module"
    """A stored module's source or grants were saved."""
    MODULE_GRANT = "module_grant", "grant a host function"
    """A host function was granted to a stored module."""
    MODULE_APPROVE = "module_approve", "approve a module"
    """A stored module's revision was approved to run."""
    MODULE_DELETE = "module_delete", "delete a module"
    """A stored module was deleted (the record keeps its id and name); its name is free."""
    SCHEDULE_TAKE_OVER = "schedule_take_over", "take over a schedule"
    """A schedule whose owner was removed got a new owner (who enabled it); its runs now
    start as that user."""
    GROUP_START = "group_start", "start a group"
    """A group of runs was started; ``details['members']`` counts them."""
    GROUP_ADD = "group_add", "add to a group"
    """Members were added to an open group; ``details['members']`` counts them."""
    GROUP_SEAL = "group_seal", "seal a group"
    """A group was sealed: it takes no more members, and its callback may start."""
    GROUP_ABORT = "group_abort", "abort a group"
    """An abort of each unfinished member of a group was requested."""
    WORKFLOW_START = "workflow_start", "start a workflow"
    """A workflow was started; ``details['steps']`` counts its steps."""
    WORKFLOW_ABORT = "workflow_abort", "abort a workflow"
    """An abort of each unfinished step of a workflow was requested."""
    WORKFLOW_RETRY_STEP = "workflow_retry_step", "retry a workflow's step"
    """A step that did not end done was run again, with the steps below it that did not;
    ``details['step']`` names it."""
    SIGNAL = "signal", "signal a run"
    """A signal was sent to a run; ``details['signal']`` names it (its payload stays with
    the run's signal, seen by those who see the run in full)."""
    LIMIT_CREATE = "limit_create", "create a flow limit"
    """A flow limit was created; every worker obeys it from its next claim."""
    LIMIT_EDIT = "limit_edit", "edit a flow limit"
    """A flow limit was changed; ``changed`` names its fields."""
    LIMIT_DELETE = "limit_delete", "delete a flow limit"
    """A flow limit was deleted (the record keeps its id and name)."""


class EntryPoint(models.TextChoices):
    """Where an action came in: each entry point says so as it calls the service layer."""

    ADMIN = "admin", "the admin"
    """The Django admin's pages and actions (the console)."""
    API = "api", "the REST API"
    """The REST API."""
    SOCKET = "socket", "the live socket"
    """A frame of the live socket."""
    PYTHON = "python", "Python code"
    """A call of the service layer from Python: a project's own views, a shell, a job."""


class AuditRecordQuerySet(models.QuerySet["AuditRecord"]):
    def older_than(self, moment: datetime) -> AuditRecordQuerySet:
        return self.filter(at__lt=moment)


class AuditRecord(models.Model):
    """One operator action: who did what to which object, when, and through which entry
    point. Written by :mod:`django_weft.operations` in the action's own transaction, so
    an action refused or rolled back leaves none; never changed afterwards.

    The actor's name is kept beside the link to the user, so that a record still says
    who acted after the account is deleted. ``changed`` names the fields an edit changed,
    never their values (a schedule's args may be private).
    """

    at = models.DateTimeField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=40, choices=AuditAction.choices)
    #: ``run``, ``schedule``, ``queue``, ``document``, ``module``: the model's name.
    object_type = models.CharField(max_length=100)
    object_id = models.CharField(max_length=255)
    object_repr = models.CharField(max_length=200)
    text = models.CharField(max_length=300)
    changed = models.JSONField(default=list, blank=True)
    details = models.JSONField(default=dict, blank=True)
    via = models.CharField(max_length=10, choices=EntryPoint.choices)

    objects = AuditRecordQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-pk"]
        verbose_name = "audit record"
        # Written by the service layer only, and never changed: viewing is all there is.
        default_permissions = ("view",)
        indexes = [
            models.Index(fields=["at"], name="weft_audit_at"),
            models.Index(fields=["object_type", "object_id"], name="weft_audit_object"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_name or 'nobody'}: {self.text} ({self.object_type} {self.object_id})"

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import F
from django.db.models.functions import Coalesce


class RunStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    """Started: the row exists and waits for a worker to claim it."""
    WAITING = "waiting", "waiting"
    """Started, and not to be claimed yet: it sleeps until ``wake_at``, waits for the
    signal ``awaiting`` (until ``wake_at``, if it has a timeout), or, a workflow's step,
    for the steps it depends on to end. It holds no worker."""
    RUNNING = "running", "running"
    """Claimed by a worker that is executing it."""
    DONE = "done", "done"
    """Finished: the function returned; ``result`` holds what it returned."""
    FAILED = "failed", "failed"
    """Finished: the function (or the finish hook) raised; ``error_*`` say what."""
    ABORTED = "aborted", "aborted"
    """Finished: an abort was requested and the run stopped."""
    LOST = "lost", "lost"
    """Finished: the worker running it stopped beating."""


UNFINISHED = (RunStatus.QUEUED, RunStatus.WAITING, RunStatus.RUNNING)
#: The statuses of a run no worker holds, which an abort finishes at once.
UNCLAIMED = (RunStatus.QUEUED, RunStatus.WAITING)

#: Priorities run from -100 (last) to 100 (first), as in Django's own tasks framework.
MIN_PRIORITY, MAX_PRIORITY, DEFAULT_PRIORITY = -100, 100, 0


class RunQuerySet(models.QuerySet["Run"]):
    def unfinished(self) -> RunQuerySet:
        return self.filter(status__in=UNFINISHED)

    def finished(self) -> RunQuerySet:
        return self.exclude(status__in=UNFINISHED)

    def queued_job_versions(self) -> models.QuerySet[Run, tuple[str, int]]:
        """Each (job, job version) of the queued runs, once: what decides which of them
        the deployed code can run."""
        return (
            self.filter(status=RunStatus.QUEUED)
            .order_by()
            .values_list("job", "job_version")
            .distinct()
        )

    def latest_finished(self) -> RunQuerySet:
        """Finished runs, the one that finished last first."""
        return self.finished().order_by("-finished_at")

    def newest_unfinished(self, *, after: uuid.UUID | None = None) -> RunQuerySet:
        """Unfinished runs, newest first; with ``after``, those that come after that run.

        The order is total (created, then id), so pages that each start after the last
        run of the one before miss no run and repeat none. Raises ``Run.DoesNotExist``
        when there is no run ``after``.
        """
        newest = self.unfinished().order_by("-created_at", "-pk")
        if after is None:
            return newest
        anchor = Run.objects.filter(pk=after).values_list("created_at", flat=True).first()
        if anchor is None:
            raise Run.DoesNotExist(f"no run {after}")
        return newest.filter(created_at__lte=anchor).exclude(created_at=anchor, pk__gte=after)

    def waiting_task_paths(self, *, known: Iterable[str], limit: int) -> list[str]:
        """Up to ``limit`` task paths of queued runs that are not among ``known``.

        How a worker learns of the tasks it has not imported yet (see
        :meth:`~django_weft.engine.worker.intake.Intake.find_tasks`).
        """
        waiting = (
            self.filter(status=RunStatus.QUEUED)
            .exclude(task_backend="")
            .exclude(job__in=list(known))
            .order_by()
            .values_list("job", flat=True)
            .distinct()
        )
        return list(waiting[:limit])

    def next_retry(self) -> datetime | None:
        """When the earliest run waiting for a retry may be claimed, or the earliest
        waiting run wakes (its sleep ends, or its wait for a signal times out)."""
        waiting = self.filter(status=RunStatus.QUEUED, retry_at__isnull=False)
        retry: datetime | None = (
            waiting.order_by("retry_at").values_list("retry_at", flat=True).first()
        )
        wake: datetime | None = (
            self.filter(status=RunStatus.WAITING, wake_at__isnull=False)
            .order_by("wake_at")
            .values_list("wake_at", flat=True)
            .first()
        )
        return min((moment for moment in (retry, wake) if moment is not None), default=None)

    def due_to_wake(self, now: datetime) -> RunQuerySet:
        """Waiting runs whose sleep has ended, or whose wait for a signal has timed out."""
        return self.filter(status=RunStatus.WAITING, wake_at__lte=now)


class Run(models.Model):
    """One run of a job: started, then executed by a worker, then finished with an outcome."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    job = models.CharField(max_length=200)
    job_version = models.PositiveIntegerField(default=1)
    args = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    queue = models.CharField(max_length=100, default="default")
    priority = models.SmallIntegerField(
        default=DEFAULT_PRIORITY, help_text="Higher runs first (-100 to 100); then older first."
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="weft_runs",
    )
    schedule = models.ForeignKey(
        "django_weft.Schedule",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="runs",
    )
    due = models.DateTimeField(
        null=True, blank=True, help_text="The slot a schedule armed this run for."
    )
    retry_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="retries",
        help_text="The run this one retries (started by a retry of it).",
    )
    # NULL, not "", for no key: the unique constraint then only covers runs that have one.
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    concurrency_key = models.CharField(max_length=200, blank=True, default="")
    state = models.OneToOneField(
        "django_weft.Document",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="run",
    )
    attempt = models.PositiveIntegerField(default=0)
    worker = models.ForeignKey(
        "django_weft.WorkerProcess",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="runs",
    )
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    abort_requested_at = models.DateTimeField(null=True, blank=True)
    retry_at = models.DateTimeField(
        null=True, blank=True, help_text="A retried run is not claimed before this moment."
    )
    result = models.JSONField(null=True, blank=True)
    error_type = models.CharField(max_length=200, blank=True)
    error_class_path = models.CharField(
        max_length=300, blank=True, help_text="The importable path of the error's class."
    )
    error_message = models.TextField(blank=True)
    error_traceback = models.TextField(blank=True)
    task_backend = models.CharField(
        max_length=100,
        blank=True,
        help_text="The django.tasks backend alias of a task's run; blank for a job's.",
    )
    run_after = models.DateTimeField(
        null=True, blank=True, help_text="A task's run_after, as enqueued."
    )
    turn_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Its turn on its queue's fair-share clock, set at start in a queue with "
        "a fair share; the claim orders by it in place of when the run was started.",
    )
    group = models.ForeignKey(
        "django_weft.Group",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="members",
        help_text="The group this run is a member of; its end counts there.",
    )
    workflow = models.ForeignKey(
        "django_weft.Workflow",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="runs",
        help_text="The workflow this run is a step of; its end may start the steps after.",
    )
    wake_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="A waiting run is claimable again at this moment: its sleep ends, or its "
        "wait for a signal times out.",
    )
    awaiting = models.CharField(
        max_length=100, blank=True, help_text="The signal a waiting run waits for."
    )
    resuming = models.BooleanField(
        default=False,
        help_text="Set while a run that waited is queued to go on: its next claim continues "
        "the same attempt.",
    )
    # Written by the database, never by Django: a trigger (migration 0013) adds one at
    # every UPDATE of the row, whoever makes it, so live frames can be ordered.
    version = models.PositiveBigIntegerField(
        default=1,
        editable=False,
        help_text="1 when started, one more at every change: a live client keeps the highest.",
    )

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        # Django's model permissions carry the meaning: view_run sees every run in
        # full, add_run may start runs, change_run may abort anyone's run.
        constraints = [
            models.UniqueConstraint(
                fields=["schedule", "due"],
                condition=models.Q(schedule__isnull=False, due__isnull=False),
                name="weft_run_one_per_slot",
                violation_error_message="This schedule already fired a run for that due time.",
            ),
            models.UniqueConstraint(
                fields=["job", "idempotency_key"],
                condition=models.Q(idempotency_key__isnull=False),
                name="weft_run_idempotency_key",
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=RunStatus.values), name="weft_run_status_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(priority__gte=MIN_PRIORITY, priority__lte=MAX_PRIORITY),
                name="weft_run_priority_range",
            ),
        ]
        indexes = [
            # The claim reads queued runs in this order and stops after a batch, so its
            # cost does not grow with the backlog: priority, then when the run became
            # claimable (its turn in a fair queue, else a task's run_after, else its
            # start), then its start; the due orders the runs one fire of a catch-up
            # started together. The claim's ORDER BY
            # (django_weft.engine.runs.claiming) spells the same expressions.
            models.Index(
                F("priority").desc(),
                Coalesce("turn_at", "run_after", "created_at"),
                F("created_at"),
                F("due"),
                name="weft_run_claim",
                condition=models.Q(status=RunStatus.QUEUED),
            ),
            models.Index(
                fields=["job", "concurrency_key"],
                name="weft_run_unfinished",
                condition=models.Q(status__in=UNFINISHED),
            ),
            # Flow limits count the running runs of a job (and key) at every claim under
            # them: the running ones only, however many are queued.
            models.Index(
                fields=["job", "concurrency_key"],
                name="weft_run_running",
                condition=models.Q(status=RunStatus.RUNNING),
            ),
            # A start in a fair queue reads the queue's first turn and its key's last
            # (django_weft.engine.limits.fairness): the fair queues' queued runs only.
            models.Index(
                fields=["queue", "turn_at"],
                name="weft_run_turns",
                condition=models.Q(status=RunStatus.QUEUED, turn_at__isnull=False),
            ),
            models.Index(
                fields=["queue", "concurrency_key", "turn_at"],
                name="weft_run_key_turns",
                condition=models.Q(status=RunStatus.QUEUED, turn_at__isnull=False),
            ),
            # Pruning and the overview read finished runs by when they finished.
            models.Index(fields=["finished_at"], name="weft_run_finished_at"),
            # The console's and the API's run lists, newest first, walk these at any size:
            # all runs, by job, by status (the order is the lists' own, created then id).
            models.Index(fields=["created_at", "id"], name="weft_run_newest"),
            models.Index(fields=["job", "created_at", "id"], name="weft_run_job_newest"),
            models.Index(fields=["status", "created_at", "id"], name="weft_run_status_newest"),
            # The overview's failures of the day, however rare among the finished runs.
            models.Index(
                fields=["finished_at"],
                name="weft_run_failures",
                condition=models.Q(status__in=[RunStatus.FAILED, RunStatus.LOST]),
            ),
            # A worker sleeps until the next retry is due.
            models.Index(
                fields=["retry_at"],
                name="weft_run_retry_at",
                condition=models.Q(status=RunStatus.QUEUED, retry_at__isnull=False),
            ),
            # ... or the next waiting run wakes; a run waiting on nothing timed is not in it,
            # so a million of them cost a worker's look nothing.
            models.Index(
                fields=["status", "wake_at"],
                name="weft_run_wake_at",
                condition=models.Q(status=RunStatus.WAITING, wake_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.job} {self.id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status not in UNFINISHED

    def record_abort_request(self, now: datetime) -> bool:
        """Store an abort request; returns False when the run had already finished."""
        updated = (
            Run.objects.unfinished()
            .filter(pk=self.pk, abort_requested_at__isnull=True)
            .update(abort_requested_at=now)
        )
        if updated:
            self.abort_requested_at = now
        return bool(updated)

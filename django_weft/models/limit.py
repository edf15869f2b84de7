"""Flow limits: how many runs of a job or a queue may run at once, or begin in a period,
across every worker.

A limit is a row, so that an operator changes it in the console or the API and every
worker obeys it at its next claim, with no restart. A job may declare limits in code
(``@job(limits=[Limit(...)])``); a worker writes each one that has no row yet when it
starts, and never overwrites a row: the row, once there, is what holds.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class FlowLimit(models.Model):
    """At most ``concurrency`` runs running at once, and at most ``rate`` runs beginning in
    any ``period``, among the runs of ``job`` (any job, when blank) in ``queue`` (any
    queue, when blank); with ``per_key``, for each key separately (the key the job's
    ``concurrency_key`` function gives a run's args: a tenant, an account). A run over a
    limit stays queued until the limit allows it; it is never refused nor failed.

    With ``fair_share``, the runs of ``queue`` take turns between keys: each run started
    there is given its turn (``Run.turn_at``), so that the claim's one order interleaves
    the keys' backlogs (see :mod:`django_weft.engine.limits.fairness`)."""

    name = models.CharField(
        max_length=100,
        unique=True,
        help_text="Names it in the console, the API, metrics and reasons.",
    )
    job = models.CharField(
        max_length=200, blank=True, help_text="The job it limits; blank: every job of its queue."
    )
    queue = models.CharField(
        max_length=100, blank=True, help_text="The queue it limits; blank: its job's every queue."
    )
    per_key = models.BooleanField(
        default=False, help_text="Each key (from the job's concurrency_key) has it separately."
    )
    concurrency = models.PositiveIntegerField(
        null=True, blank=True, help_text="At most this many running at once."
    )
    rate = models.PositiveIntegerField(
        null=True, blank=True, help_text="At most this many beginning in any period."
    )
    period = models.DurationField(null=True, blank=True, help_text="The rate's period.")
    fair_share = models.BooleanField(
        default=False,
        help_text="Its queue's runs take turns between keys, round robin (weighted by "
        "weights); priorities still order the runs of a key.",
    )
    weights = models.JSONField(
        default=dict,
        blank=True,
        help_text='A fair share\'s weight for each key, e.g. {"tenant-7": 3}; a key not '
        "named has weight 1.",
    )
    updated_at = models.DateTimeField()
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who changed it last; none for a job's default.",
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "flow limit"
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(job="", queue=""),
                name="weft_limit_has_a_scope",
                violation_error_message="Name a job, a queue, or both.",
            ),
            models.CheckConstraint(
                condition=models.Q(concurrency__gte=1)
                | models.Q(rate__gte=1)
                | models.Q(fair_share=True),
                name="weft_limit_limits_something",
                violation_error_message="Give a concurrency, a rate or a fair share.",
            ),
            models.CheckConstraint(
                condition=models.Q(rate__isnull=True, period__isnull=True)
                | models.Q(rate__isnull=False, period__isnull=False),
                name="weft_limit_rate_has_a_period",
                violation_error_message="A rate needs its period, and a period its rate.",
            ),
            models.CheckConstraint(
                condition=models.Q(fair_share=False) | (models.Q(job="") & ~models.Q(queue="")),
                name="weft_limit_fair_share_of_a_queue",
                violation_error_message="A fair share is a queue's, for every job in it.",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class FlowBegin(models.Model):
    """A run's begin under a rate limit: the claim writes one for each run it takes
    under a rate, and counts those of the last period (older ones are deleted as it
    goes). A log rather than a counter per window, so that no window of the period's
    length, wherever it starts, holds more begins than the rate."""

    # No index of its own: the window's index leads with it.
    limit = models.ForeignKey(FlowLimit, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.CharField(max_length=200, blank=True)
    at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["limit", "at"], name="weft_begin_window")]

    def __str__(self) -> str:
        return f"{self.limit_id} {self.key} {self.at}"

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction

from django_weft.timing.cron import CronError, CronPlan, zone_from_name
from django_weft.timing.plans import AtPlan, EveryPlan, Plan

if TYPE_CHECKING:
    from django.db.models.deletion import Collector

#: What the scheduler keeps on a row. A full ``save()`` of a loaded row never writes
#: these, so an instance read before the worker fired the row cannot roll them back.
SCHEDULER_FIELDS = frozenset(
    {
        "armed",
        "next_due",
        "buffered_due",
        "missed",
        "problem",
        "last_due",
        "last_started",
        "last_ended",
        "last_status",
        "last_error_type",
        "last_error_message",
        "last_run",
    }
)

#: The fields that decide when a row fires; changing one re-arms the row from now.
PLAN_FIELDS = ("cron", "timezone", "every", "at", "on_gap", "on_fold")


class CatchUp(models.TextChoices):
    SKIP = "skip", "skip missed fires"
    """A fire later than its grace is dropped and counted in ``missed``."""
    LATEST = "latest", "run the latest missed fire"
    """One run for the most recent missed slot."""
    ALL = "all", "run every missed fire in the window"
    """One run per missed slot no older than the catch-up window."""


class Overlap(models.TextChoices):
    SKIP = "skip", "skip while the previous run is going"
    """The fire is dropped; the next one is found from now."""
    BUFFER_ONE = "buffer_one", "run once after the previous run"
    """At most one fire waits and starts when the previous run finishes."""
    ALLOW = "allow", "allow overlapping runs"
    """Fires start whatever the previous run is doing."""


class OnGap(models.TextChoices):
    SHIFT = "shift", "run at the first instant after the gap"
    """A wall time that does not exist runs when the clocks have gone forward."""
    SKIP = "skip", "skip that day"
    """A wall time that does not exist does not run."""


class OnFold(models.TextChoices):
    FIRST = "first", "run once, the first time"
    """A wall time that happens twice runs at its first occurrence."""
    BOTH = "both", "run both times"
    """A wall time that happens twice runs at both occurrences."""


class LastStatus(models.TextChoices):
    RUNNING = "running", "running"
    """The last fire's run has not finished."""
    OK = "ok", "ok"
    """The last run finished done."""
    FAILED = "failed", "failed"
    """The last run failed, was aborted or lost, or could not start."""


def park_on_owner_delete(
    collector: Collector, field: models.Field[Any, Any], sub_objs: Any, using: str
) -> None:
    """``Schedule.owner``'s ``on_delete``: the schedules of a deleted user stay, parked.

    Their owner is set to NULL, as ``SET_NULL`` does, and ``owner_removed`` marks them,
    so that a row which ran as someone is not taken for one that runs as no one (the
    deployment's own): the scheduler fires nothing of it until someone takes it over.
    """
    removed = cast("models.Field[Any, Any]", field.model._meta.get_field("owner_removed"))
    collector.add_field_update(field, None, sub_objs)
    collector.add_field_update(removed, True, sub_objs)


class ScheduleQuerySet(models.QuerySet["Schedule"]):
    def due(self, now: datetime) -> ScheduleQuerySet:
        """Armed rows whose next slot has come: the only rows a tick needs to read."""
        return self.filter(enabled=True, armed=True, next_due__lte=now).order_by("next_due")

    def unarmed(self) -> ScheduleQuerySet:
        """Rows that are new, re-enabled or whose plan was edited: armed from now."""
        # Ordered by pk so the partial index serves it, not the default order by name
        # (which made SQLite walk the whole table).
        return self.filter(enabled=True, armed=False).order_by("pk")

    def enable(self) -> int:
        """Switch rows on; like a row switched on in a form, each is armed from now.

        A row whose owner was removed is switched on too: it is taken over as the
        deployment's own (no owner), and fires again from now.
        """
        return self.filter(models.Q(enabled=False) | models.Q(owner_removed=True)).update(
            enabled=True, armed=False, next_due=None, owner_removed=False
        )

    def next_due(self) -> datetime | None:
        first = (
            self.filter(enabled=True, armed=True, next_due__isnull=False)
            .order_by("next_due")
            .values_list("next_due", flat=True)
            .first()
        )
        return first


class Schedule(models.Model):
    """When a job fires: a cron on a zone's wall clock, a fixed interval, or a moment."""

    name = models.CharField(max_length=200, unique=True)
    job = models.CharField(max_length=200, help_text="Name of a registered job.")
    args = models.JSONField(default=dict, blank=True, help_text="The job's args, as JSON.")
    cron = models.CharField(max_length=200, blank=True, help_text='Five fields, e.g. "0 7 * * *".')
    timezone = models.CharField(
        max_length=64, blank=True, help_text='IANA zone the cron is read in, e.g. "Europe/Berlin".'
    )
    every = models.DurationField(null=True, blank=True, help_text="A fixed interval.")
    at = models.DateTimeField(null=True, blank=True, help_text="A single moment.")
    enabled = models.BooleanField(default=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=park_on_owner_delete,
        related_name="weft_schedules",
    )
    owner_removed = models.BooleanField(
        default=False,
        editable=False,
        help_text="Its owner's user was deleted: nothing fires until it is taken over.",
    )
    catch_up = models.CharField(max_length=16, choices=CatchUp.choices, default=CatchUp.SKIP)
    catch_up_window = models.DurationField(
        null=True, blank=True, help_text='Oldest slot "all" makes up (default: the setting).'
    )
    grace = models.DurationField(
        null=True,
        blank=True,
        help_text="Lateness after which a fire is missed (default: the setting).",
    )
    overlap = models.CharField(max_length=16, choices=Overlap.choices, default=Overlap.SKIP)
    on_gap = models.CharField(max_length=16, choices=OnGap.choices, default=OnGap.SHIFT)
    on_fold = models.CharField(max_length=16, choices=OnFold.choices, default=OnFold.FIRST)

    armed = models.BooleanField(default=False, editable=False)
    next_due = models.DateTimeField(null=True, blank=True, editable=False)
    buffered_due = models.DateTimeField(null=True, blank=True, editable=False)
    missed = models.PositiveIntegerField(default=0, editable=False)
    problem = models.TextField(blank=True, editable=False)

    last_due = models.DateTimeField(null=True, blank=True, editable=False)
    last_started = models.DateTimeField(null=True, blank=True, editable=False)
    last_ended = models.DateTimeField(null=True, blank=True, editable=False)
    last_status = models.CharField(
        max_length=16, choices=LastStatus.choices, blank=True, editable=False
    )
    last_error_type = models.CharField(max_length=200, blank=True, editable=False)
    last_error_message = models.TextField(blank=True, editable=False)
    last_run = models.ForeignKey(
        "django_weft.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ScheduleQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(cron__gt="", every__isnull=True, at__isnull=True)
                    | models.Q(cron="", every__isnull=False, at__isnull=True)
                    | models.Q(cron="", every__isnull=True, at__isnull=False)
                ),
                name="weft_schedule_one_plan",
                violation_error_message="Give exactly one of cron, every and at.",
            ),
            models.CheckConstraint(
                condition=models.Q(cron="") | ~models.Q(timezone=""),
                name="weft_schedule_cron_has_zone",
                violation_error_message="A cron schedule needs a time zone.",
            ),
            models.CheckConstraint(
                condition=models.Q(every__isnull=True) | models.Q(every__gt=timedelta(0)),
                name="weft_schedule_every_positive",
                violation_error_message="The interval must be positive.",
            ),
            models.CheckConstraint(
                condition=models.Q(catch_up__in=CatchUp.values)
                & models.Q(overlap__in=Overlap.values)
                & models.Q(on_gap__in=OnGap.values)
                & models.Q(on_fold__in=OnFold.values),
                name="weft_schedule_policies_valid",
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_due"],
                name="weft_schedule_next_due",
                condition=models.Q(enabled=True, armed=True, next_due__isnull=False),
            ),
            models.Index(
                fields=["id"],
                name="weft_schedule_unarmed",
                condition=models.Q(enabled=True, armed=False),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Refuse a plan that cannot be scheduled; leave the scheduler's fields to it.

        The plan is the row's own data, checked here on every write path (a refused row
        writes nothing). Its job and args are checked against the deployed code by
        :func:`django_weft.engine.schedules.saving.validate_schedule`, which the admin, the API and
        :mod:`django_weft.operations` call, and again at every fire.

        A full save of a stored row writes the fields its editors own
        (:meth:`edited_fields`), never :data:`SCHEDULER_FIELDS`, so an instance read
        before a fire cannot roll back what the scheduler wrote since; a save naming
        ``update_fields`` writes those. Re-arming a row whose plan an UPDATE changes is
        the database's (the trigger of migration ``0003_rearm_triggers``), whoever writes.

        A row given an owner is no longer one whose owner was removed: the new owner has
        taken it over (``owner_removed`` is derived, and written with ``owner``).
        """
        self.validate_plan()
        if self.owner_id is not None:
            self.owner_removed = False
        full_update = not self._state.adding and not kwargs.get("force_insert")
        if full_update and not args and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = self.edited_fields()
        if "owner" in (kwargs.get("update_fields") or ()):
            kwargs["update_fields"] = {*kwargs["update_fields"], "owner_removed"}
        super().save(*args, **kwargs)

    def edited_fields(self) -> list[str]:
        """What a full save of this stored row writes: every loaded field but the
        scheduler's (a field left out by ``only()`` or ``defer()`` is left alone too)."""
        deferred = self.get_deferred_fields()
        return [
            field.name
            for field in self._meta.concrete_fields
            if not field.primary_key
            and field.name not in SCHEDULER_FIELDS
            and field.attname not in deferred
        ]

    def forget_last_run(self) -> None:
        """Clear the last-run record, so that a one-off fires again at its ``at``.

        No slot of a schedule fires twice (a database constraint), so the run that
        already fired this one-off's slot is detached from the row: it stays in the
        run history, without its schedule.
        """
        with transaction.atomic():
            if self.at is not None:
                self.runs.filter(due=self.at).update(schedule=None)
            Schedule.objects.filter(pk=self.pk).update(
                armed=False,
                next_due=None,
                last_due=None,
                last_started=None,
                last_ended=None,
                last_status="",
                last_error_type="",
                last_error_message="",
                last_run=None,
            )
        self.refresh_from_db()

    # -- validation ---------------------------------------------------------------------

    def clean(self) -> None:
        self.validate_plan()

    def validate_plan(self) -> None:
        """Raise ``ValidationError`` naming each field that makes this row's plan unusable."""
        errors: dict[str, list[str]] = {}
        unreadable: set[str] = set()
        for name in ("every", "at"):
            # The ORM takes strings for these fields; read them as it will store them.
            value = getattr(self, name)
            if isinstance(value, str) and value:
                try:
                    field = cast("models.Field[Any, Any]", self._meta.get_field(name))
                    setattr(self, name, field.to_python(value))
                except ValidationError as error:
                    errors[name] = list(error.messages)
                    unreadable.add(name)
        given = [name for name in ("cron", "every", "at") if getattr(self, name) not in ("", None)]
        if len(given) != 1:
            message = "Give exactly one of cron, every and at" + (
                f" (got {', '.join(given)})." if given else "."
            )
            for name in given or ("cron", "every", "at"):
                errors.setdefault(name, []).append(message)
        if self.cron and not self.timezone:
            errors.setdefault("timezone", []).append(
                'A cron schedule needs an IANA time zone, e.g. "America/Toronto".'
            )
        elif self.timezone:
            try:
                zone_from_name(self.timezone)
            except CronError as error:
                errors.setdefault("timezone", []).append(str(error))
        if self.cron:
            # An unusable zone does not hide the expression's own errors: it is read on UTC
            # then, so a form shows what is wrong with both fields at once.
            zone = "UTC" if "timezone" in errors else self.timezone
            try:
                CronPlan(self.cron, zone, on_gap=self.on_gap, on_fold=self.on_fold)
            except CronError as error:
                errors.setdefault(error.field, []).append(str(error))
        if "every" not in unreadable and self.every is not None and self.every <= timedelta(0):
            # str(timedelta(seconds=-5)) is "-1 day, 23:59:55": show it as "-0:00:05".
            shown = f"-{-self.every}" if self.every < timedelta(0) else str(self.every)
            errors.setdefault("every", []).append(f"The interval must be positive, not {shown}.")
        if "at" not in unreadable and self.at is not None and self.at.utcoffset() is None:
            errors.setdefault("at", []).append(
                f"The moment must be timezone-aware, not the naive {self.at.isoformat()}."
            )
        for name, least in (
            ("grace", timedelta(0)),
            ("catch_up_window", timedelta(microseconds=1)),
        ):
            value = getattr(self, name)
            if isinstance(value, timedelta) and value < least:
                errors.setdefault(name, []).append(
                    f"Must be {'zero or more' if not least else 'positive'}, not {value}."
                )
        if errors:
            raise ValidationError(errors)

    # -- timing -------------------------------------------------------------------------

    def describe_plan(self) -> str:
        if self.cron:
            return f"cron {self.cron} ({self.timezone})"
        if self.every is not None:
            return f"every {self.every}"
        return f"at {self.at.isoformat() if self.at else '?'}"

    def plan(self, origin: datetime) -> Plan:
        """This row's plan; ``origin`` anchors an interval's grid when it is not yet armed."""
        if self.cron:
            return CronPlan(self.cron, self.timezone, on_gap=self.on_gap, on_fold=self.on_fold)
        if self.every is not None:
            grid = self.next_due if self.armed and self.next_due else origin + self.every
            return EveryPlan(self.every, grid)
        assert self.at is not None
        return AtPlan(self.at)

    def first_due(self, now: datetime) -> datetime | None:
        """The slot a row armed at ``now`` waits for.

        An interval's first fire is one interval after the row is first seen. A
        one-off fires at its moment, even a past one, unless it already started at
        or after that moment.
        """
        if self.at is not None:
            if self.last_started is not None and self.last_started >= self.at:
                return None
            return self.at
        fire = self.plan(now).next_fire(now)
        return fire.due if fire else None

    def timezone_name(self) -> str:
        return self.timezone or "UTC"

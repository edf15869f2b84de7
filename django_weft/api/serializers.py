"""The API's serializers: the owner and guest views, the bodies of starts and edits.

A run's two views are :mod:`django_weft.live.projections`' (the sockets show the same dicts);
the serializers here describe them for the schema and pick one per row. Schedules have
the same two views: a guest sees the plan and how the last fire went, never the args or
the error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, models, transaction
from django.utils.translation import gettext as _
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.settings import api_settings

from django_weft import operations
from django_weft.access import sees_schedule_in_full
from django_weft.exceptions import Forbidden
from django_weft.live import projections
from django_weft.models import Run, RunStatus, Schedule
from django_weft.models.run import MAX_PRIORITY, MIN_PRIORITY

if TYPE_CHECKING:
    from django_weft.access import User

_M = TypeVar("_M", bound=models.Model)


# The fields describe django_weft.live.projections.guest_run's view; the view is its.
class RunGuestSerializer(serializers.Serializer[Run]):
    """A run as anyone allowed to watch sees it: its job, phase and times, never its
    output, result or error, nor the args its job marks private."""

    id = serializers.UUIDField(read_only=True)
    job = serializers.CharField(read_only=True)
    phase = serializers.CharField(
        read_only=True, help_text="The status, or blocked (queued, and its job not deployed)."
    )
    status = serializers.ChoiceField(choices=RunStatus.choices, read_only=True)
    priority = serializers.IntegerField(read_only=True)
    queue = serializers.CharField(read_only=True)
    worker = serializers.UUIDField(
        read_only=True,
        allow_null=True,
        help_text="The id of the worker process that claimed it last; null before a claim.",
    )
    args = serializers.DictField(read_only=True, help_text="Without the job's private args.")
    owner = serializers.CharField(read_only=True, allow_null=True, help_text="A username.")
    schedule = serializers.CharField(read_only=True, allow_null=True, help_text="Its name.")
    due = serializers.DateTimeField(read_only=True, allow_null=True)
    created_at = serializers.DateTimeField(read_only=True)
    started_at = serializers.DateTimeField(read_only=True, allow_null=True)
    finished_at = serializers.DateTimeField(read_only=True, allow_null=True)
    waiting_for = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="The signal a waiting run waits for (ctx.wait_for); null otherwise.",
    )
    wake_at = serializers.DateTimeField(
        read_only=True,
        allow_null=True,
        help_text="When a waiting run goes on by itself: its sleep ends, or its wait times out.",
    )
    group = serializers.UUIDField(
        read_only=True, allow_null=True, help_text="The group the run is a member of."
    )
    workflow = serializers.UUIDField(
        read_only=True, allow_null=True, help_text="The workflow the run is a step of."
    )
    job_version = serializers.IntegerField(
        read_only=True, help_text="The version of the job's code the run was started for."
    )
    revision = serializers.IntegerField(
        read_only=True, help_text="1 when started, one more at every change of the run."
    )
    retry_of = serializers.UUIDField(
        read_only=True, allow_null=True, help_text="The run this one retries."
    )
    retries = serializers.ListField(
        child=serializers.UUIDField(), read_only=True, help_text="The runs that retry this one."
    )

    def to_representation(self, instance: Run) -> dict[str, Any]:
        return {**projections.guest_run(instance), **retry_links(instance)}


# The fields describe django_weft.live.projections.owner_run's view; the view is its.
class RunOwnerSerializer(RunGuestSerializer):
    """A run as its owner (or an operator) sees it: everything."""

    args = serializers.DictField(read_only=True)
    attempt = serializers.IntegerField(read_only=True)
    idempotency_key = serializers.CharField(read_only=True, allow_null=True)
    abort_requested = serializers.BooleanField(read_only=True)
    retry_at = serializers.DateTimeField(read_only=True, allow_null=True)
    result = serializers.JSONField(read_only=True, allow_null=True)
    error_type = serializers.CharField(read_only=True)
    error_message = serializers.CharField(read_only=True)
    error_traceback = serializers.CharField(read_only=True)
    state = serializers.DictField(read_only=True, allow_null=True)
    state_revision = serializers.IntegerField(read_only=True, allow_null=True)

    def to_representation(self, instance: Run) -> dict[str, Any]:
        return {**projections.owner_run(instance), **retry_links(instance)}


def retry_links(run: Run) -> dict[str, Any]:
    """The run ``run`` retries and the runs that retry it, oldest first, by id.

    Both views show them: a guest sees which runs exist anyway. The API's run queryset
    prefetches ``retries``; elsewhere they are one query.
    """
    return {
        "retry_of": str(run.retry_of_id) if run.retry_of_id is not None else None,
        "retries": [str(retry.pk) for retry in run.retries.all()],
    }


class ScheduleGuestSerializer(serializers.ModelSerializer[Schedule]):
    """A schedule as any signed-in user sees it: when it fires and how the last fire went."""

    class Meta:
        model = Schedule
        fields = list(projections.GUEST_SCHEDULE_FIELDS)
        read_only_fields = fields


class ScheduleOwnerSerializer(ScheduleGuestSerializer):
    """A schedule as its owner (or an operator) sees it, and what a create or edit sends.
    A refused write is a 400 naming the field, or a 403 naming the permission."""

    # Saving goes through django_weft.operations (who may write what, validated against
    # the deployed code), as the console's and Python's writes do.

    owner = serializers.SerializerMethodField()

    class Meta(ScheduleGuestSerializer.Meta):
        fields = [
            *ScheduleGuestSerializer.Meta.fields,
            "owner",
            "args",
            "catch_up",
            "catch_up_window",
            "grace",
            "overlap",
            "missed",
            "problem",
            "owner_removed",
            "last_due",
            "last_error_type",
            "last_error_message",
            "last_run",
            "created_at",
            "updated_at",
        ]
        # Only the plan, job, args and policies are written; the model's non-editable
        # fields (next_due, last_*, ...) are read-only anyway, and owner is set on create.
        read_only_fields = ["id"]

    def get_owner(self, schedule: Schedule) -> str | None:
        return schedule.owner.get_username() if schedule.owner is not None else None

    def create(self, validated_data: dict[str, Any]) -> Schedule:
        with model_validation():
            return operations.create_schedule_for(self.context["request"].user, validated_data)

    def update(self, instance: Schedule, validated_data: dict[str, Any]) -> Schedule:
        with model_validation():
            return operations.edit_schedule_for(
                self.context["request"].user, instance, validated_data
            )


@contextmanager
def model_validation() -> Iterator[None]:
    """Turn a refused schedule write into DRF's errors, keeping the field names."""
    try:
        with transaction.atomic():
            yield
    except IntegrityError as error:
        # The form-level unique check passed, then a concurrent write took the name.
        raise serializers.ValidationError(
            {"name": [_("A schedule with this name was just created; choose another name.")]}
        ) from error
    except Forbidden as error:
        raise PermissionDenied(str(error)) from error
    except DjangoValidationError as error:
        if not hasattr(error, "error_dict"):
            raise serializers.ValidationError(
                {api_settings.NON_FIELD_ERRORS_KEY: error.messages}
            ) from error
        raise serializers.ValidationError(
            {
                api_settings.NON_FIELD_ERRORS_KEY if field == NON_FIELD_ERRORS else field: messages
                for field, messages in error.message_dict.items()
            }
        ) from error


class ViewerSerializer(serializers.BaseSerializer[_M]):
    """Each object in the owner or the guest view, as the request's user may see it.

    A list mixes both views (your own runs in full, the others as a guest), so the
    choice is made per object rather than per request. The user is the context's
    ``user`` or its request's. Read-only.
    """

    owner_class: ClassVar[type[serializers.BaseSerializer[Any]]]
    guest_class: ClassVar[type[serializers.BaseSerializer[Any]]]

    def view(self, user: User, obj: _M) -> Any:
        raise NotImplementedError

    def to_representation(self, instance: _M) -> Any:
        user = self.context.get("user")
        if user is None:
            request = self.context.get("request")
            user = request.user if request is not None else AnonymousUser()
        return self.view(user, instance)


class RunViewSerializer(ViewerSerializer[Run]):
    """A run: the owner view (RunOwner) for its owner or a user with
    django_weft.view_run, the guest view (RunGuest) for anyone else signed in."""

    owner_class = RunOwnerSerializer
    guest_class = RunGuestSerializer

    def view(self, user: User, obj: Run) -> Any:
        return {**projections.run_for(user, obj), **retry_links(obj)}


class ScheduleViewSerializer(ViewerSerializer[Schedule]):
    """A schedule: the owner view (ScheduleOwner) for its owner or a user with
    django_weft.view_schedule, the guest view (ScheduleGuest) for anyone else signed in."""

    owner_class = ScheduleOwnerSerializer
    guest_class = ScheduleGuestSerializer

    def view(self, user: User, obj: Schedule) -> Any:
        chosen = self.owner_class if sees_schedule_in_full(user, obj) else self.guest_class
        return chosen(obj, context=self.context).data


class RunStartFormSerializer(serializers.Serializer[Any]):
    """A start's job and args: the browsable API's forms for ``POST runs/``.

    An HTML form sends every input, an empty one as ``""``, which a start refuses for its
    priority, queue and ``not_before``; so the forms offer only these two, and the raw
    JSON form starts with a body a start takes. The body itself is checked by
    :func:`django_weft.operations.parse_start`, as a socket's start frame is.
    """

    job = serializers.CharField(max_length=operations.JOB_NAME_LENGTH)
    args = serializers.DictField(required=False, default=dict)


class RunStartSerializer(RunStartFormSerializer):
    """The body of a start: the job's name and its args (checked against the job's own
    args), and optionally the run's priority, queue and the moment it may begin. Any
    other key is refused with a 400 naming it."""

    # The body itself is read by django_weft.operations.parse_start, as a socket's start
    # frame is; this describes it for the schema.

    priority = serializers.IntegerField(
        required=False,
        min_value=MIN_PRIORITY,
        max_value=MAX_PRIORITY,
        help_text="Higher is claimed first; the job's priority when left out.",
    )
    queue = serializers.CharField(
        required=False,
        max_length=operations.QUEUE_NAME_LENGTH,
        help_text="The job's queue when left out; another queue needs django_weft.pause_queue.",
    )
    not_before = serializers.DateTimeField(
        required=False,
        help_text="No worker claims the run before this moment (ISO 8601 with its offset).",
    )


class SignalSerializer(serializers.Serializer[Any]):
    """The body of a signal; any other key is refused with a 400 naming it."""

    # The body itself is read by django_weft.operations.parse_signal; this describes it
    # for the schema and the browsable API's form.

    name = serializers.CharField(
        max_length=100, help_text="The signal's name, as the run's ctx.wait_for names it."
    )
    payload = serializers.JSONField(
        required=False, allow_null=True, help_text="Any JSON; what the wait returns."
    )


class NoBodySerializer(serializers.Serializer[Any]):
    """The body of a request that takes none (an abort, a run now).

    The browsable API builds a form from each action's serializer; this one gives it an
    empty form instead of a row view, which cannot be built without a row.
    """


class RunFilterSerializer(serializers.Serializer[Any]):
    """The query parameters of the run list; each one given narrows it. Any other
    parameter (but the pagination's and the format's) is refused with a 400 naming it:
    a misspelt filter silently ignored would answer with every run."""

    job = serializers.CharField(required=False, help_text="A job name.")
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False)
    owner = serializers.CharField(required=False, help_text="The owner's username.")
    queue = serializers.CharField(required=False, help_text="A queue name.")
    worker = serializers.UUIDField(required=False, help_text="A worker process's id.")

    def __init__(self, *args: Any, also_allowed: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.also_allowed = frozenset(also_allowed)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = getattr(self, "initial_data", {})
        unknown = sorted(set(given) - set(self.fields) - self.also_allowed)
        if unknown:
            accepted = ", ".join(sorted({*self.fields, *self.also_allowed}))
            raise serializers.ValidationError(
                {
                    name: [
                        _("Unknown parameter %(name)s; the run list accepts %(accepted)s.")
                        % {"name": name, "accepted": accepted}
                    ]
                    for name in unknown
                }
            )
        return attrs


class RefusalSerializer(serializers.Serializer[Any]):
    """A 409: the request was valid but the run's or job's present state refuses it."""

    detail = serializers.CharField()
    code = serializers.ChoiceField(
        choices=[
            "concurrency_limit",
            "idempotency_key_reused",
            "finished",
            "not_finished",
            "group_closed",
            "step_not_retriable",
            "refused",
        ]
    )


class RunBulkSerializer(serializers.Serializer[Any]):
    """The body of a bulk action: exactly one of ids and filter."""

    # The body itself is read by django_weft.api.bulk.parse_selection; this describes it
    # for the schema.

    ids = serializers.ListField(
        child=serializers.UUIDField(),
        required=False,
        min_length=1,
        max_length=operations.MAX_BULK_IDS,
        help_text=f"The runs to act on: 1 to {operations.MAX_BULK_IDS} run ids.",
    )
    filter = RunFilterSerializer(
        required=False,
        help_text="Every run the run list shows with these filters ({} is every run).",
    )


class BulkReasonSerializer(serializers.Serializer[Any]):
    """Runs refused for one reason: how many, and the words of the first refusal."""

    count = serializers.IntegerField()
    detail = serializers.CharField()


class BulkResultSerializer(serializers.Serializer[Any]):
    """What a bulk action did: how many runs it acted on, and how many it refused, by
    reason."""

    # django_weft.operations.BulkResult, as the API writes it.

    action = serializers.ChoiceField(choices=["retry", "abort", "delete"])
    done = serializers.IntegerField(help_text="Runs retried, aborted or deleted.")
    refused = serializers.IntegerField(help_text="Runs left as they were.")
    batches = serializers.IntegerField(help_text="Transactions committed, one per batch.")
    reasons = serializers.DictField(
        child=BulkReasonSerializer(),
        help_text=(
            "Refused runs by reason code: forbidden, finished, not_finished, not_found, "
            "already_requested, concurrency_limit, invalid, refused."
        ),
    )
    started = serializers.ListField(
        child=serializers.UUIDField(), help_text="The runs a bulk retry started."
    )

"""What a run looks like to its owner and to a guest: used by the API and the live sockets.

One definition of each view, so a socket frame and an API response never disagree. A
guest sees which runs exist and their phase: never their state (the output), result,
error or the args their job marks private. Schedules have the same two views: a guest
sees the plan and how the last fire went, never the args or the error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, models, transaction
from rest_framework import serializers
from rest_framework.settings import api_settings

from django_weft.access import sees_run_in_full, sees_schedule_in_full
from django_weft.jobs import registry
from django_weft.models import Run, RunStatus, Schedule
from django_weft.models.schedule import PLAN_FIELDS

if TYPE_CHECKING:
    from django_weft.access import User

_M = TypeVar("_M", bound=models.Model)


class RunGuestSerializer(serializers.ModelSerializer[Run]):
    """A run as anyone allowed to watch sees it."""

    phase = serializers.CharField(read_only=True)
    args = serializers.SerializerMethodField()
    owner = serializers.SerializerMethodField()
    schedule: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "job",
            "phase",
            "status",
            "args",
            "owner",
            "schedule",
            "due",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_args(self, run: Run) -> dict[str, Any]:
        if run.job in registry:
            return registry.get(run.job).public_args(run.args)
        # A blocked run's args are not decoded, nor shown to guests.
        return {}

    def get_owner(self, run: Run) -> str | None:
        return run.owner.get_username() if run.owner is not None else None


class RunOwnerSerializer(RunGuestSerializer):
    """A run as its owner (or an operator) sees it: everything."""

    state = serializers.SerializerMethodField()
    state_revision = serializers.SerializerMethodField()
    abort_requested = serializers.SerializerMethodField()

    class Meta(RunGuestSerializer.Meta):
        fields = [
            *RunGuestSerializer.Meta.fields,
            "attempt",
            "idempotency_key",
            "abort_requested",
            "result",
            "error_type",
            "error_message",
            "state",
            "state_revision",
        ]
        read_only_fields = fields

    def get_args(self, run: Run) -> dict[str, Any]:
        args: dict[str, Any] = run.args
        return args

    def get_state(self, run: Run) -> dict[str, Any] | None:
        return run.state.data if run.state is not None else None

    def get_state_revision(self, run: Run) -> int | None:
        return run.state.revision if run.state is not None else None

    def get_abort_requested(self, run: Run) -> bool:
        return run.abort_requested_at is not None


class ScheduleGuestSerializer(serializers.ModelSerializer[Schedule]):
    """A schedule as any signed-in user sees it: when it fires and how the last fire went."""

    class Meta:
        model = Schedule
        fields = [
            "id",
            "name",
            "job",
            *PLAN_FIELDS,
            "enabled",
            "next_due",
            "last_status",
            "last_started",
            "last_ended",
        ]
        read_only_fields = fields


class ScheduleOwnerSerializer(ScheduleGuestSerializer):
    """A schedule as its owner (or an operator) sees it, and what a create or edit sends.

    Saving goes through :meth:`Schedule.save`, which validates the plan, the job and
    its args; a refusal comes back as a 400 naming the same fields the model names.
    """

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
            return super().create(validated_data)

    def update(self, instance: Schedule, validated_data: dict[str, Any]) -> Schedule:
        with model_validation():
            return super().update(instance, validated_data)


@contextmanager
def model_validation() -> Iterator[None]:
    """Turn the model's ``ValidationError`` into DRF's, keeping its field names.

    The model validates in ``save()`` because rows are written from the admin, the API
    and plain ORM code alike; the API only translates the refusal into a 400.
    """
    try:
        with transaction.atomic():
            yield
    except IntegrityError as error:
        # The form-level unique check passed, then a concurrent write took the name.
        raise serializers.ValidationError(
            {"name": ["A schedule with this name was just created; choose another name."]}
        ) from error
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
    ``user`` (a socket's) or its request's. Read-only.
    """

    owner_class: ClassVar[type[serializers.BaseSerializer[Any]]]
    guest_class: ClassVar[type[serializers.BaseSerializer[Any]]]

    def sees_in_full(self, user: User, obj: _M) -> bool:
        raise NotImplementedError

    def to_representation(self, instance: _M) -> Any:
        user = self.context.get("user")
        if user is None:
            request = self.context.get("request")
            user = request.user if request is not None else AnonymousUser()
        full = self.sees_in_full(user, instance)
        return self._serializer(self.owner_class if full else self.guest_class).to_representation(
            instance
        )

    def _serializer(
        self, cls: type[serializers.BaseSerializer[Any]]
    ) -> serializers.BaseSerializer[Any]:
        # One instance per class, reused for every row of a list: a ModelSerializer
        # builds its fields on first use, which is not free.
        cache: dict[type[Any], serializers.BaseSerializer[Any]] = self.__dict__.setdefault(
            "_viewer_serializers", {}
        )
        if cls not in cache:
            cache[cls] = cls(context=self.context)
        return cache[cls]


class RunViewSerializer(ViewerSerializer[Run]):
    """A run: the owner view (RunOwner) for its owner or a user with
    django_weft.view_run, the guest view (RunGuest) for anyone else signed in."""

    owner_class = RunOwnerSerializer
    guest_class = RunGuestSerializer

    def sees_in_full(self, user: User, obj: Run) -> bool:
        return sees_run_in_full(user, obj)


class ScheduleViewSerializer(ViewerSerializer[Schedule]):
    """A schedule: the owner view (ScheduleOwner) for its owner or a user with
    django_weft.view_schedule, the guest view (ScheduleGuest) for anyone else signed in."""

    owner_class = ScheduleOwnerSerializer
    guest_class = ScheduleGuestSerializer

    def sees_in_full(self, user: User, obj: Schedule) -> bool:
        return sees_schedule_in_full(user, obj)


class RunStartSerializer(serializers.Serializer[Any]):
    """The body of a start: the job's name and its args (checked by the job's own serializer)."""

    job = serializers.CharField(max_length=200)
    args = serializers.DictField(required=False, default=dict)


class RunFilterSerializer(serializers.Serializer[Any]):
    """The query parameters of the run list; each one given narrows it."""

    job = serializers.CharField(required=False, help_text="A job name.")
    status = serializers.ChoiceField(choices=RunStatus.choices, required=False)
    owner = serializers.CharField(required=False, help_text="The owner's username.")


class RefusalSerializer(serializers.Serializer[Any]):
    """A 409: the request was valid but the run's or job's present state refuses it."""

    detail = serializers.CharField()
    code = serializers.ChoiceField(
        choices=["concurrency_limit", "idempotency_key_reused", "finished"]
    )

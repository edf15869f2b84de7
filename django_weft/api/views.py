"""The REST API: schedules (CRUD and run now) and runs (list, read, start, abort).

The views stay thin: who may do what lives in :mod:`django_weft.api.permissions`, what a
row looks like to whom in :mod:`django_weft.api.serializers`, and every start and abort
goes through :mod:`django_weft.runs`, like the admin's and the sockets' do. The errors
the run functions raise on purpose become 400 (bad input, naming the field) or 409 (a
valid request the present state refuses, with a ``code``); a refusal writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from django.contrib.auth import get_user_model
from django.db import InterfaceError, OperationalError
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from django_weft import runs
from django_weft.api import schema as _schema  # noqa: F401  (registers the schema extension)
from django_weft.api.permissions import RunPermission, SchedulePermission
from django_weft.api.serializers import (
    RefusalSerializer,
    RunFilterSerializer,
    RunStartSerializer,
    RunViewSerializer,
    ScheduleOwnerSerializer,
    ScheduleViewSerializer,
)
from django_weft.exceptions import (
    ConcurrencyLimitReached,
    IdempotencyKeyReused,
    InvalidArgs,
    UnknownJob,
)
from django_weft.jobs import registry
from django_weft.models import Run, Schedule
from django_weft.scheduler import run_now

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    RunViewSetBase = viewsets.GenericViewSet[Run]
    ScheduleViewSetBase = viewsets.ModelViewSet[Schedule]
else:
    RunViewSetBase = viewsets.GenericViewSet
    ScheduleViewSetBase = viewsets.ModelViewSet

#: The request header a client sets to make a start safe to resend.
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: Seconds a client is told to wait before resending a request refused by an outage.
RETRY_AFTER_OUTAGE = 5

logger = logging.getLogger("django_weft.api")

BAD_REQUEST = OpenApiResponse(
    OpenApiTypes.OBJECT, description="Invalid input: the body maps each bad field to messages."
)
FORBIDDEN = OpenApiResponse(
    OpenApiTypes.OBJECT, description="Not signed in, or a permission is missing (named)."
)
CONFLICT = OpenApiResponse(
    RefusalSerializer, description="Valid, but refused by the present state; see ``code``."
)
UNAVAILABLE = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="The database is unavailable (code database_unavailable); resend later.",
)


class Conflict(APIException):
    """409: the request is well formed, but the job's or the run's state refuses it."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the present state."
    default_code = "conflict"

    def __init__(self, error: Exception | str, code: str) -> None:
        # The body carries ``code`` next to ``detail``, so clients branch on a stable word.
        super().__init__({"detail": str(error), "code": code})


@contextmanager
def refusals() -> Iterator[None]:
    """Translate the errors a start raises on purpose into API errors."""
    try:
        yield
    except UnknownJob as error:
        raise serializers.ValidationError({"job": [str(error)]}) from error
    except InvalidArgs as error:
        raise serializers.ValidationError({"args": error.errors}) from error
    except ConcurrencyLimitReached as error:
        raise Conflict(error, "concurrency_limit") from error
    except IdempotencyKeyReused as error:
        raise Conflict(error, "idempotency_key_reused") from error


class DatabaseUnavailable(APIException):
    """503: the database did not answer (a restart, a failover); the request may be resent."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The database is unavailable; try again in a few seconds."
    default_code = "database_unavailable"

    def __init__(self) -> None:
        super().__init__({"detail": self.default_detail, "code": self.default_code})


class WeftViewSetMixin:
    """What every API view shares: a database outage answers 503, not 500.

    Nothing was written (the transaction could not commit), so a client may resend; with
    an ``Idempotency-Key`` a resent start can never make a second run.
    """

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, OperationalError | InterfaceError):
            logger.warning("API request refused, the database is unavailable: %s", exc)
            response: Response = super().handle_exception(DatabaseUnavailable())  # type: ignore[misc]
            response["Retry-After"] = str(RETRY_AFTER_OUTAGE)
            return response
        handled: Response = super().handle_exception(exc)  # type: ignore[misc]
        return handled


class Pagination(LimitOffsetPagination):
    """``?limit=&offset=``; a list without ``limit`` gets the first ``default_limit`` rows."""

    default_limit = 50
    max_limit = 500


@extend_schema_view(
    list=extend_schema(
        summary="List runs, newest first",
        description="Your runs (all runs with django_weft.view_run) in full, others as a guest.",
        parameters=[RunFilterSerializer],
        responses={200: RunViewSerializer(many=True), 400: BAD_REQUEST, 403: FORBIDDEN},
    ),
    retrieve=extend_schema(summary="Read a run", responses={200: RunViewSerializer}),
)
class RunViewSet(
    WeftViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, RunViewSetBase
):
    """Runs: every signed-in user may list and read them; see the permissions module."""

    queryset = Run.objects.select_related("owner", "schedule", "state").order_by(
        "-created_at", "-pk"
    )
    serializer_class = RunViewSerializer
    permission_classes = [RunPermission]
    pagination_class = Pagination

    def get_queryset(self) -> QuerySet[Run]:
        queryset = super().get_queryset()
        if self.action != "list":
            return queryset
        filters = RunFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        given = filters.validated_data
        if "job" in given:
            queryset = queryset.filter(job=given["job"])
        if "status" in given:
            queryset = queryset.filter(status=given["status"])
        if "owner" in given:
            username_field = get_user_model().USERNAME_FIELD
            queryset = queryset.filter(**{f"owner__{username_field}": given["owner"]})
        return queryset

    @extend_schema(
        summary="Start a run",
        description=(
            "Needs django_weft.add_run. With an Idempotency-Key header, resending the same "
            "start returns the run the first one made (200) instead of a new one (201)."
        ),
        request=RunStartSerializer,
        parameters=[
            OpenApiParameter(
                IDEMPOTENCY_HEADER,
                str,
                OpenApiParameter.HEADER,
                description="Any string; the same key (for you) returns the same run.",
            )
        ],
        responses={
            201: RunViewSerializer,
            200: OpenApiResponse(RunViewSerializer, description="A resent start: its run."),
            400: BAD_REQUEST,
            403: FORBIDDEN,
            409: CONFLICT,
            503: UNAVAILABLE,
        },
    )
    def create(self, request: Request) -> Response:
        """Start a run; the caller owns it and gets it back at once, queued.

        The ``Idempotency-Key`` header is stored scoped to the user, as
        ``f"{user.pk}:{key}"``: keys are chosen by clients, so two users who happen to
        pick the same key must get two runs, and neither may receive the other's run.
        """
        body = RunStartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        key = self._idempotency_key(request)
        with refusals():
            job = registry.get(body.validated_data["job"])
            run, created = runs.start_or_get(
                job,
                body.validated_data["args"],
                key=key,
                owner=cast("AbstractBaseUser", request.user),
            )
        return Response(
            self.get_serializer(run).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    def _idempotency_key(self, request: Request) -> str | None:
        value = request.headers.get(IDEMPOTENCY_HEADER)
        if value is None:
            return None
        scoped = f"{request.user.pk}:{value}"
        limit = cast(int, Run._meta.get_field("idempotency_key").max_length)
        if not value.strip():
            raise serializers.ValidationError({IDEMPOTENCY_HEADER: ["Must not be blank."]})
        if len(scoped) > limit:
            room = limit - (len(scoped) - len(value))
            raise serializers.ValidationError(
                {IDEMPOTENCY_HEADER: [f"At most {room} characters, not {len(value)}."]}
            )
        return scoped

    @extend_schema(
        summary="Request an abort",
        description=(
            "Needs to own the run or django_weft.change_run. A queued run ends at once; a "
            "running one stops at its next sleep() or check()."
        ),
        request=None,
        responses={
            202: RunViewSerializer,
            403: FORBIDDEN,
            404: OpenApiResponse(description="No such run."),
            409: CONFLICT,
            503: UNAVAILABLE,
        },
    )
    @action(detail=True, methods=["post"])
    def abort(self, request: Request, pk: str | None = None) -> Response:
        """Store an abort request; 202 because a running run stops later, not now."""
        run = self.get_object()
        if not runs.abort(run):
            run.refresh_from_db(fields=["status", "abort_requested_at"])
            # An abort asked twice is still one request; only a finished run refuses.
            if run.is_finished:
                raise Conflict(f"the run already finished ({run.status})", "finished")
        run = self.get_queryset().get(pk=run.pk)
        return Response(self.get_serializer(run).data, status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    list=extend_schema(
        summary="List schedules",
        description="Yours (all with django_weft.view_schedule) in full, others as a guest.",
        responses={200: ScheduleViewSerializer(many=True), 403: FORBIDDEN},
    ),
    retrieve=extend_schema(summary="Read a schedule", responses={200: ScheduleViewSerializer}),
    create=extend_schema(
        summary="Create a schedule",
        description="Needs django_weft.add_schedule; the caller owns the new schedule.",
        request=ScheduleOwnerSerializer,
        responses={201: ScheduleOwnerSerializer, 400: BAD_REQUEST, 403: FORBIDDEN},
    ),
    update=extend_schema(
        summary="Replace a schedule",
        description="Needs to own it or django_weft.change_schedule.",
        request=ScheduleOwnerSerializer,
        responses={200: ScheduleViewSerializer, 400: BAD_REQUEST, 403: FORBIDDEN},
    ),
    partial_update=extend_schema(
        summary="Change a schedule",
        description="Needs to own it or django_weft.change_schedule.",
        request=ScheduleOwnerSerializer,
        responses={200: ScheduleViewSerializer, 400: BAD_REQUEST, 403: FORBIDDEN},
    ),
    destroy=extend_schema(
        summary="Delete a schedule",
        description="Needs to own it or django_weft.delete_schedule. Its runs are kept.",
        responses={204: None, 403: FORBIDDEN},
    ),
)
class ScheduleViewSet(WeftViewSetMixin, ScheduleViewSetBase):
    """Schedules: every signed-in user may list and read them; see the permissions module.

    Writes are validated by :meth:`Schedule.save` (plan, zone, job and args), the same
    check the admin and ORM code get.
    """

    queryset = Schedule.objects.select_related("owner").order_by("name", "pk")
    permission_classes = [SchedulePermission]
    pagination_class = Pagination

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        if self.action in ("create", "update", "partial_update"):
            return ScheduleOwnerSerializer
        return ScheduleViewSerializer

    def perform_create(self, serializer: serializers.BaseSerializer[Schedule]) -> None:
        serializer.save(owner=self.request.user)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Save the edit, then answer in the view the editor may see.

        Someone with change_schedule but not view_schedule may edit another user's
        schedule without being shown its args or last error in the reply.
        """
        schedule = self.get_object()
        partial = bool(kwargs.pop("partial", False))
        edit = self.get_serializer(schedule, data=request.data, partial=partial)
        edit.is_valid(raise_exception=True)
        edit.save()
        view = ScheduleViewSerializer(edit.instance, context=self.get_serializer_context())
        return Response(view.data)

    @extend_schema(
        summary="Run a schedule now",
        description=(
            "Needs to own it or django_weft.change_schedule. Starts a run of its job and "
            "args outside its plan (the plan is untouched); the run is owned by the "
            "schedule's owner."
        ),
        request=None,
        responses={
            201: RunViewSerializer,
            400: BAD_REQUEST,
            403: FORBIDDEN,
            409: CONFLICT,
            503: UNAVAILABLE,
        },
    )
    @action(detail=True, methods=["post"], url_path="run-now")
    def run_now(self, request: Request, pk: str | None = None) -> Response:
        schedule = self.get_object()
        with refusals():
            run = run_now(schedule)
        view = RunViewSerializer(run, context=self.get_serializer_context())
        return Response(view.data, status=status.HTTP_201_CREATED)

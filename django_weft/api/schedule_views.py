"""The REST API's schedules: list, read, create, change, delete, and run now.

Thin, as the run views are (:mod:`django_weft.api.views`): the service layer decides
who may do what, the serializers what a row looks like to whom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from django_weft import operations
from django_weft.api.serializers import (
    NoBodySerializer,
    RunViewSerializer,
    ScheduleOwnerSerializer,
    ScheduleViewSerializer,
)
from django_weft.api.views import (
    API_PERMISSIONS,
    BAD_REQUEST,
    CONFLICT,
    FORBIDDEN,
    UNAVAILABLE,
    Pagination,
    WeftViewSetMixin,
    refusals,
)
from django_weft.models import Schedule

if TYPE_CHECKING:
    ScheduleViewSetBase = viewsets.ModelViewSet[Schedule]
else:
    ScheduleViewSetBase = viewsets.ModelViewSet


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
        description=(
            "Needs to own it or django_weft.change_schedule. For a schedule whose owner was "
            "removed (owner_removed), enabled: true takes it over: you become its owner, "
            "which needs django_weft.add_run and the use of any stored module it calls."
        ),
        request=ScheduleOwnerSerializer,
        responses={200: ScheduleViewSerializer, 400: BAD_REQUEST, 403: FORBIDDEN},
    ),
    partial_update=extend_schema(
        summary="Change a schedule",
        description=(
            "Needs to own it or django_weft.change_schedule. For a schedule whose owner was "
            "removed (owner_removed), enabled: true takes it over: you become its owner, "
            "which needs django_weft.add_run and the use of any stored module it calls."
        ),
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
    """Schedules: every signed-in user may list and read them, their own in full, other
    people's in the guest view. A write is checked as the console's and Python's are
    (plan, zone, job and args), and refused with a 400 naming the field."""

    queryset = Schedule.objects.select_related("owner").order_by("name", "pk")
    permission_classes = API_PERMISSIONS
    pagination_class = Pagination

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        if self.action in ("create", "update", "partial_update"):
            return ScheduleOwnerSerializer
        if self.action == "run_now":
            return NoBodySerializer
        return ScheduleViewSerializer

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Check the right to create before the body, then save through the service layer."""
        with refusals():
            operations.require_schedule_create(request.user)
        return super().create(request, *args, **kwargs)

    def perform_destroy(self, instance: Schedule) -> None:
        with refusals():
            operations.delete_schedule_for(self.request.user, instance)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Save the edit, then answer in the view the editor may see.

        Someone with change_schedule but not view_schedule may edit another user's
        schedule without being shown its args or last error in the reply.
        """
        schedule = self.get_object()
        with refusals():
            operations.require_schedule_change(request.user, schedule)
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
            run = operations.run_now_for(request.user, schedule)
        view = RunViewSerializer(run, context=self.get_serializer_context())
        return Response(view.data, status=status.HTTP_201_CREATED)

"""The REST API's groups: start one (with an ``Idempotency-Key``), read it, add members
to an open one, seal it, abort it.

Thin, as the run views are (:mod:`django_weft.api.views`): the service layer checks the
input and who may do what (:mod:`django_weft.operations.groups`); what a group looks
like to whom is :func:`django_weft.live.projections.group_for`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from django_weft import operations
from django_weft.api.views import (
    API_PERMISSIONS,
    BAD_REQUEST,
    CONFLICT,
    FORBIDDEN,
    IDEMPOTENCY_HEADER,
    UNAVAILABLE,
    Pagination,
    WeftViewSetMixin,
    refusals,
)
from django_weft.live import projections
from django_weft.models import Group

if TYPE_CHECKING:
    GroupViewSetBase = viewsets.GenericViewSet[Group]
else:
    GroupViewSetBase = viewsets.GenericViewSet


# The fields describe django_weft.live.projections.group_for's view; the view is its.
class GroupSerializer(serializers.Serializer[Group]):
    """A group of runs: how far its members got, by outcome, and the run its end
    started; its callbacks with their args for its owner and operators."""

    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(read_only=True)
    owner = serializers.CharField(read_only=True, allow_null=True)
    condition = serializers.CharField(read_only=True, help_text="all_ended or all_done.")
    sealed = serializers.BooleanField(read_only=True)
    ended = serializers.BooleanField(read_only=True)
    total = serializers.IntegerField(read_only=True)
    unfinished = serializers.IntegerField(read_only=True)
    done = serializers.IntegerField(read_only=True)
    failed = serializers.IntegerField(read_only=True)
    aborted = serializers.IntegerField(read_only=True)
    lost = serializers.IntegerField(read_only=True)
    callback_run = serializers.UUIDField(read_only=True, allow_null=True)
    created_at = serializers.DateTimeField(read_only=True)
    sealed_at = serializers.DateTimeField(read_only=True, allow_null=True)
    ended_at = serializers.DateTimeField(read_only=True, allow_null=True)
    callback = serializers.DictField(
        read_only=True, allow_null=True, help_text="Owner view only: its job and args."
    )
    on_failure = serializers.DictField(
        read_only=True, allow_null=True, help_text="Owner view only: its job and args."
    )

    def to_representation(self, instance: Group) -> dict[str, Any]:
        return projections.group_for(self.context["request"].user, instance)


class GroupStartSerializer(serializers.Serializer[Any]):
    """The body of a group's start; any other key is refused with a 400 naming it."""

    # The body itself is read by django_weft.operations.parse_group.

    members = serializers.ListField(
        child=serializers.DictField(), help_text="Starts: each {job, args}, as POST runs/ takes."
    )
    name = serializers.CharField(required=False)
    callback = serializers.DictField(required=False, help_text="{job, args}; gets a group arg.")
    on_failure = serializers.DictField(required=False, help_text="{job, args}, with all_done.")
    condition = serializers.ChoiceField(choices=["all_ended", "all_done"], required=False)
    sealed = serializers.BooleanField(required=False, default=True)


class GroupMembersSerializer(serializers.Serializer[Any]):
    members = serializers.ListField(child=serializers.DictField())


@extend_schema_view(
    list=extend_schema(
        summary="List groups, newest first", responses={200: GroupSerializer(many=True)}
    ),
    retrieve=extend_schema(summary="Read a group", responses={200: GroupSerializer}),
)
class GroupViewSet(
    WeftViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, GroupViewSetBase
):
    """Groups: any signed-in user may read one (its callbacks' args in full only for its
    owner and those with view_run); starting needs add_run, the rest the group's owner
    or change_run."""

    queryset = Group.objects.select_related("owner").order_by("-created_at", "pk")
    permission_classes = API_PERMISSIONS
    pagination_class = Pagination
    serializer_class = GroupSerializer

    def reply(self, group: Group, status_code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=group.pk)
        view = GroupSerializer(fresh, context=self.get_serializer_context())
        return Response(view.data, status=status_code)

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        """What a request sends (the browsable API's forms); replies are GroupSerializer."""
        if self.action == "create":
            return GroupStartSerializer
        if self.action == "members":
            return GroupMembersSerializer
        return GroupSerializer

    @extend_schema(
        summary="Start a group",
        description=(
            "Needs django_weft.add_run. Starts the members and the group in one "
            "transaction; the callback starts once, when the last member has ended. With "
            "an Idempotency-Key header, resending returns the group the first one made."
        ),
        request=GroupStartSerializer,
        parameters=[OpenApiParameter(IDEMPOTENCY_HEADER, str, OpenApiParameter.HEADER)],
        responses={
            201: GroupSerializer,
            200: OpenApiResponse(GroupSerializer, description="A resent start: its group."),
            400: BAD_REQUEST,
            403: FORBIDDEN,
            409: CONFLICT,
            503: UNAVAILABLE,
        },
    )
    def create(self, request: Request) -> Response:
        with refusals():
            asked = operations.parse_group(
                request.user, request.data, key=request.headers.get(IDEMPOTENCY_HEADER)
            )
            group, started = operations.start_requested_group_for(request.user, asked)
        return self.reply(group, status.HTTP_201_CREATED if started else status.HTTP_200_OK)

    @extend_schema(
        summary="Add members to an open group",
        description="Needs to own the group or django_weft.change_run, and add_run.",
        request=GroupMembersSerializer,
        responses={201: GroupSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 409: CONFLICT},
    )
    @action(detail=True, methods=["post"])
    def members(self, request: Request, pk: str | None = None) -> Response:
        group = self.get_object()
        with refusals():
            asked = operations.parse_members(request.user, request.data)
            operations.add_to_group_for(request.user, group, asked)
        return self.reply(group, status.HTTP_201_CREATED)

    @extend_schema(
        summary="Seal a group",
        description=(
            "Needs to own the group or django_weft.change_run. It takes no more members; "
            "its callback starts once every member has ended (at once if all have)."
        ),
        request=None,
        responses={200: GroupSerializer, 403: FORBIDDEN},
    )
    @action(detail=True, methods=["post"])
    def seal(self, request: Request, pk: str | None = None) -> Response:
        group = self.get_object()
        with refusals():
            operations.seal_group_for(request.user, group)
        return self.reply(group)

    @extend_schema(
        summary="Abort a group",
        description=(
            "Needs to own the group or django_weft.change_run. Seals it and requests an "
            "abort of each unfinished member."
        ),
        request=None,
        responses={202: GroupSerializer, 403: FORBIDDEN},
    )
    @action(detail=True, methods=["post"])
    def abort(self, request: Request, pk: str | None = None) -> Response:
        group = self.get_object()
        with refusals():
            operations.abort_group_for(request.user, group)
        return self.reply(group, status.HTTP_202_ACCEPTED)

"""The REST API's flow limits: list, read, create, change, delete.

Thin, as the other views are: the service layer (:mod:`django_weft.operations.limits`)
checks the permission, validates the limit against the deployed code and writes the
audit record; the serializer only reads the body's types, refusing keys it does not
know.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from django_weft import operations
from django_weft.api.views import (
    API_PERMISSIONS,
    BAD_REQUEST,
    FORBIDDEN,
    Pagination,
    WeftViewSetMixin,
    refusals,
)
from django_weft.engine.limits.saving import EDITABLE
from django_weft.models import FlowLimit

if TYPE_CHECKING:
    LimitViewSetBase = viewsets.ModelViewSet[FlowLimit]
else:
    LimitViewSetBase = viewsets.ModelViewSet


class LimitSerializer(serializers.ModelSerializer[FlowLimit]):
    """A flow limit: at most so many runs at once, or beginning in a period. The period is
    a duration: "00:00:01" is a second, "1 00:00:00" a day."""

    updated_by = serializers.SerializerMethodField()

    class Meta:
        model = FlowLimit
        fields = ["id", *EDITABLE, "updated_at", "updated_by"]
        read_only_fields = ["id", "updated_at", "updated_by"]
        # The service layer checks the row whole (and names the field that is wrong).
        extra_kwargs: dict[str, dict[str, Any]] = {"name": {"validators": []}}
        validators: list[Any] = []

    def get_updated_by(self, limit: FlowLimit) -> str | None:
        return limit.updated_by.get_username() if limit.updated_by is not None else None

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(EDITABLE))
            if unknown:
                known = ", ".join(EDITABLE)
                raise serializers.ValidationError(
                    {name: [f"Unknown field; a limit has {known}."] for name in unknown}
                )
        return super().to_internal_value(data)


CHANGE = "Needs django_weft.change_flowlimit; obeyed at every worker's next claim."


@extend_schema_view(
    list=extend_schema(summary="List flow limits", responses={200: LimitSerializer(many=True)}),
    retrieve=extend_schema(summary="Read a flow limit", responses={200: LimitSerializer}),
    create=extend_schema(
        summary="Create a flow limit",
        description="Needs django_weft.add_flowlimit; obeyed at every worker's next claim.",
        responses={201: LimitSerializer, 400: BAD_REQUEST, 403: FORBIDDEN},
    ),
    update=extend_schema(
        summary="Replace a flow limit",
        description=CHANGE,
        responses={200: LimitSerializer, 400: BAD_REQUEST, 403: FORBIDDEN},
    ),
    partial_update=extend_schema(
        summary="Change a flow limit",
        description=CHANGE,
        responses={200: LimitSerializer, 400: BAD_REQUEST, 403: FORBIDDEN},
    ),
    destroy=extend_schema(
        summary="Delete a flow limit",
        description="Needs django_weft.delete_flowlimit; what it held back may run at once.",
        responses={204: None, 403: FORBIDDEN},
    ),
)
class LimitViewSet(WeftViewSetMixin, LimitViewSetBase):
    """Flow limits: every signed-in user may read them (what holds runs back is no
    secret); the model's permissions decide who writes them."""

    queryset = FlowLimit.objects.select_related("updated_by").order_by("name")
    serializer_class = LimitSerializer
    permission_classes = API_PERMISSIONS
    pagination_class = Pagination

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        parsed = self.get_serializer(data=request.data)
        parsed.is_valid(raise_exception=True)
        with refusals():
            limit = operations.create_limit_for(request.user, parsed.validated_data)
        return Response(self.get_serializer(limit).data, status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        limit = self.get_object()
        parsed = self.get_serializer(
            limit, data=request.data, partial=bool(kwargs.pop("partial", False))
        )
        parsed.is_valid(raise_exception=True)
        with refusals():
            edited = operations.edit_limit_for(request.user, limit, parsed.validated_data)
        return Response(self.get_serializer(edited).data)

    def perform_destroy(self, instance: FlowLimit) -> None:
        with refusals():
            operations.delete_limit_for(self.request.user, instance)

"""The REST API's workflows: start one (with an ``Idempotency-Key``), read it with its
steps, abort it, retry a step.

Thin, as the run views are (:mod:`django_weft.api.views`): the service layer checks the
input and who may do what (:mod:`django_weft.operations.workflows`); what a workflow
looks like to whom is :func:`django_weft.live.projections.workflow_for`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import Prefetch, QuerySet
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
from django_weft.models import Workflow, WorkflowStep

if TYPE_CHECKING:
    WorkflowViewSetBase = viewsets.GenericViewSet[Workflow]
else:
    WorkflowViewSetBase = viewsets.GenericViewSet


class StepGroupSerializer(serializers.Serializer[Any]):
    """How far a group step's members got."""

    id = serializers.UUIDField(read_only=True)
    total = serializers.IntegerField(read_only=True)
    ended = serializers.IntegerField(read_only=True)
    failed = serializers.IntegerField(read_only=True, help_text="Ended other than done.")


class WorkflowStepSerializer(serializers.Serializer[WorkflowStep]):
    """A step of a workflow: its job, what it depends on, its phase and its run."""

    name = serializers.CharField(read_only=True)
    job = serializers.CharField(read_only=True)
    after = serializers.ListField(child=serializers.CharField(), read_only=True)
    runs_anyway = serializers.BooleanField(read_only=True)
    pending = serializers.IntegerField(read_only=True, help_text="Dependencies not ended yet.")
    run = serializers.UUIDField(read_only=True, allow_null=True, help_text="Its newest run.")
    phase = serializers.CharField(read_only=True, allow_null=True)
    attempt = serializers.IntegerField(read_only=True, allow_null=True)
    started_at = serializers.DateTimeField(read_only=True, allow_null=True)
    finished_at = serializers.DateTimeField(read_only=True, allow_null=True)
    group = StepGroupSerializer(
        read_only=True,
        allow_null=True,
        help_text="A group step's group once it fanned out (its run gathers the members).",
    )
    result = serializers.JSONField(read_only=True, help_text="Owner view only.")
    error_type = serializers.CharField(read_only=True, help_text="Owner view only.")
    error_message = serializers.CharField(read_only=True, help_text="Owner view only.")


# The fields describe django_weft.live.projections.workflow_for's view; the view is its.
class WorkflowSerializer(serializers.Serializer[Workflow]):
    """A workflow: its graph of steps, each step's phase and times, how far it got; its
    args and its steps' results and errors for those who may see them."""

    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(read_only=True)
    version = serializers.IntegerField(read_only=True)
    owner = serializers.CharField(read_only=True, allow_null=True)
    status = serializers.CharField(read_only=True, help_text="running, done, failed, aborted.")
    abort_requested = serializers.BooleanField(read_only=True)
    total = serializers.IntegerField(read_only=True)
    unfinished = serializers.IntegerField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    ended_at = serializers.DateTimeField(read_only=True, allow_null=True)
    callback_run = serializers.UUIDField(read_only=True, allow_null=True)
    steps = WorkflowStepSerializer(many=True, read_only=True)
    args = serializers.DictField(read_only=True, help_text="Owner view only.")

    def to_representation(self, instance: Workflow) -> dict[str, Any]:
        return projections.workflow_for(self.context["request"].user, instance)


class WorkflowStartSerializer(serializers.Serializer[Any]):
    """The body of a workflow's start; any other key is refused with a 400 naming it."""

    # The body itself is read by django_weft.operations.parse_workflow.

    workflow = serializers.CharField(help_text="The name of a workflow defined in code.")
    args = serializers.DictField(required=False, help_text="The workflow's args.")


@extend_schema_view(
    list=extend_schema(
        summary="List workflows, newest first", responses={200: WorkflowSerializer(many=True)}
    ),
    retrieve=extend_schema(summary="Read a workflow", responses={200: WorkflowSerializer}),
)
class WorkflowViewSet(
    WeftViewSetMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, WorkflowViewSetBase
):
    """Workflows: any signed-in user may read one (its args and its steps' results only
    its owner and those with view_run); starting needs add_run, aborting and retrying a
    step the workflow's owner or change_run."""

    permission_classes = API_PERMISSIONS
    pagination_class = Pagination
    serializer_class = WorkflowSerializer

    def get_queryset(self) -> QuerySet[Workflow]:
        steps = WorkflowStep.objects.select_related("run", "group").order_by("position")
        return (
            Workflow.objects.select_related("owner")
            .prefetch_related(Prefetch("steps", queryset=steps))
            .order_by("-created_at", "pk")
        )

    def reply(self, workflow: Workflow, status_code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=workflow.pk)
        view = WorkflowSerializer(fresh, context=self.get_serializer_context())
        return Response(view.data, status=status_code)

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        """What a request sends (the browsable API's form); replies are WorkflowSerializer."""
        if self.action == "create":
            return WorkflowStartSerializer
        return WorkflowSerializer

    @extend_schema(
        summary="Start a workflow",
        description=(
            "Needs django_weft.add_run. Starts a run for each step in one transaction; a "
            "step with dependencies waits until they have ended. With an Idempotency-Key "
            "header, resending returns the workflow the first one made."
        ),
        request=WorkflowStartSerializer,
        parameters=[OpenApiParameter(IDEMPOTENCY_HEADER, str, OpenApiParameter.HEADER)],
        responses={
            201: WorkflowSerializer,
            200: OpenApiResponse(WorkflowSerializer, description="A resent start: its workflow."),
            400: BAD_REQUEST,
            403: FORBIDDEN,
            409: CONFLICT,
            503: UNAVAILABLE,
        },
    )
    def create(self, request: Request) -> Response:
        with refusals():
            asked = operations.parse_workflow(
                request.user, request.data, key=request.headers.get(IDEMPOTENCY_HEADER)
            )
            workflow, started = operations.start_requested_workflow_for(request.user, asked)
        return self.reply(workflow, status.HTTP_201_CREATED if started else status.HTTP_200_OK)

    @extend_schema(
        summary="Abort a workflow",
        description=(
            "Needs to own the workflow or django_weft.change_run. Requests an abort of each "
            "unfinished step; it ends aborted once every step has ended."
        ),
        request=None,
        responses={202: WorkflowSerializer, 403: FORBIDDEN},
    )
    @action(detail=True, methods=["post"])
    def abort(self, request: Request, pk: str | None = None) -> Response:
        workflow = self.get_object()
        with refusals():
            operations.abort_workflow_for(request.user, workflow)
        return self.reply(workflow, status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Retry a step of a workflow",
        description=(
            "Needs to own the workflow or django_weft.change_run, and add_run. Runs the step "
            "again (it must have ended other than done, its dependencies done) and the steps "
            "below it that did not end done; the steps that were done are not run again."
        ),
        request=None,
        responses={201: WorkflowSerializer, 403: FORBIDDEN, 409: CONFLICT},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"steps/(?P<step>[A-Za-z0-9_-]+)/retry",
        url_name="retry-step",
    )
    def retry_step(self, request: Request, step: str, pk: str | None = None) -> Response:
        workflow = self.get_object()
        with refusals():
            operations.retry_step_for(request.user, workflow, step)
        return self.reply(workflow, status.HTTP_201_CREATED)

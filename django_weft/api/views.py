"""The REST API's runs (list, read, start, abort, signal, bulk), and what every view of
the API shares (its permissions, pagination, refusals; the schedules' views are in
:mod:`django_weft.api.schedule_views`).

The views stay thin: who may do what is decided by :mod:`django_weft.operations`, which
every write goes through, as the admin's and the sockets' do; what a row looks like to
whom comes from :mod:`django_weft.live.projections` through the serializers. A refusal becomes
400 (bad input, naming the field), 403 (naming the missing permission) or 409 (a valid
request the present state refuses, with a ``code``), and writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.core.exceptions import NON_FIELD_ERRORS, RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, QueryDict
from django.http.response import HttpResponseBase
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from django_weft import operations
from django_weft.api import schema as _schema  # noqa: F401  (registers the schema extension)
from django_weft.api.bulk import parse_selection
from django_weft.api.parsers import BodyTooLarge, BoundedJSONParser, body_limit, refuse_oversize
from django_weft.api.run_filters import filter_runs
from django_weft.api.serializers import (
    BulkResultSerializer,
    NoBodySerializer,
    RefusalSerializer,
    RunBulkSerializer,
    RunFilterSerializer,
    RunStartFormSerializer,
    RunStartSerializer,
    RunViewSerializer,
    SignalSerializer,
)
from django_weft.models import Run
from django_weft.models.counting import estimated_count

if TYPE_CHECKING:
    RunViewSetBase = viewsets.GenericViewSet[Run]
else:
    RunViewSetBase = viewsets.GenericViewSet

#: Who may use the API at all: signed-in users (each write then checks its own
#: permission). The schema and its pages follow it (:mod:`django_weft.api.discovery`).
API_PERMISSIONS: list[type[BasePermission]] = [IsAuthenticated]

#: The request header a client sets to make a start safe to resend.
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: The field of an HTML form that carries its CSRF token (Django's name for it).
CSRF_FORM_FIELD = "csrfmiddlewaretoken"
#: Seconds a client is told to wait before resending a request refused by an outage.
RETRY_AFTER_OUTAGE = 5

logger = logging.getLogger("django_weft.api")

#: The runs that retry each run of a page, read in one query for the whole page.
RETRIES = Prefetch(
    "retries", queryset=Run.objects.only("id", "retry_of").order_by("created_at", "pk")
)

BAD_REQUEST = OpenApiResponse(
    OpenApiTypes.OBJECT, description="Invalid input: the body maps each bad field to messages."
)
FORBIDDEN = OpenApiResponse(
    OpenApiTypes.OBJECT, description="Not signed in, or a permission is missing (named)."
)
CONFLICT = OpenApiResponse(
    RefusalSerializer, description="Valid, but refused by the present state; its code says why."
)
UNAVAILABLE = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="The database is unavailable (code database_unavailable); resend later.",
)


class Conflict(APIException):
    """409: the request is well formed, but the job's or the run's state refuses it."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = _("The request conflicts with the present state.")
    default_code = "conflict"

    def __init__(self, error: Exception | str, code: str) -> None:
        # The body carries ``code`` next to ``detail``, so clients branch on a stable word.
        super().__init__({"detail": str(error), "code": code})


#: How a refusal's fields (:func:`django_weft.operations.describe_refusal`) are named in
#: a 400's body: the start's key comes from a header, a body that is not an object is
#: named as DRF names it.
FIELD_NAMES = {"key": IDEMPOTENCY_HEADER, NON_FIELD_ERRORS: api_settings.NON_FIELD_ERRORS_KEY}


@contextmanager
def refusals() -> Iterator[None]:
    """Turn what the service layer refuses into API errors: 400, 403 or 409 with a code."""
    try:
        yield
    except operations.REFUSALS as error:
        code, message, fields = operations.describe_refusal(error)
        if code == "invalid":
            body: dict[str, Any] = {}
            for name, messages in fields.items():
                top, _dot, rest = name.partition(".")
                if top == "args" and rest:
                    body.setdefault("args", {})[rest] = messages
                else:
                    body[FIELD_NAMES.get(name, name)] = messages
            raise serializers.ValidationError(body or {"detail": [message]}) from error
        if code == "forbidden":
            raise PermissionDenied(message) from error
        raise Conflict(message, code) from error


class DatabaseUnavailable(APIException):
    """503: the database did not answer (a restart, a failover); the request may be resent."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = _("The database is unavailable; try again in a few seconds.")
    default_code = "database_unavailable"

    def __init__(self) -> None:
        super().__init__({"detail": self.default_detail, "code": self.default_code})


class WeftViewSetMixin:
    """What every API view shares: what it asks of the service layer is on record as
    coming through the API, a database outage answers 503, not 500, a JSON body nested
    too deeply 400 and a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` a JSON 413
    (:mod:`django_weft.api.parsers`), not a 500 or Django's HTML 400.

    Nothing was written (the transaction could not commit), so a client may resend; with
    an ``Idempotency-Key`` a resent start can never make a second run.
    """

    parser_classes: Sequence[type[BaseParser]]

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        with operations.entry_point("api"):
            response: HttpResponseBase = super().dispatch(request, *args, **kwargs)  # type: ignore[misc]
        return response

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        """Refuse a body too large by its length before anything reads it (the
        authentication's CSRF check of a form included)."""
        refuse_oversize(request)
        super().initial(request, *args, **kwargs)  # type: ignore[misc]

    def get_parsers(self) -> list[BaseParser]:
        """The project's parsers, DRF's JSON parser replaced by the bounded one."""
        return [
            BoundedJSONParser() if parser is JSONParser else parser()
            for parser in self.parser_classes
        ]

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, OperationalError | InterfaceError):
            logger.warning("API request refused, the database is unavailable: %s", exc)
            response: Response = super().handle_exception(DatabaseUnavailable())  # type: ignore[misc]
            response["Retry-After"] = str(RETRY_AFTER_OUTAGE)
            return response
        if isinstance(exc, RequestDataTooBig):
            # Django's refusal of a body it found over the limit as it came to read it
            # (longer than its Content-Length said); left alone, its HTML 400 and a
            # logged traceback.
            exc = BodyTooLarge(body_limit() or 0)
        handled: Response = super().handle_exception(exc)  # type: ignore[misc]
        return handled


class Pagination(LimitOffsetPagination):
    """``?limit=&offset=``; a list without ``limit`` gets the first ``default_limit`` rows.

    ``count`` is exact up to :data:`~django_weft.models.counting.EXACT_BELOW` rows, the
    planner's estimate past that on PostgreSQL: the run table is never counted whole.
    """

    default_limit = 50
    max_limit = 500

    def get_count(self, queryset: Any) -> int:
        if isinstance(queryset, QuerySet):
            return estimated_count(queryset)
        return len(queryset)


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
    """Runs: every signed-in user may list and read them, their own in full, other
    people's in the guest view (no args the job marks private, no output)."""

    queryset = (
        Run.objects.select_related("owner", "schedule", "state")
        .prefetch_related(RETRIES)
        .order_by("-created_at", "-pk")
    )
    serializer_class = RunViewSerializer
    permission_classes = API_PERMISSIONS
    pagination_class = Pagination

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        """What a request sends (the browsable API's forms are built from it); replies
        are always :class:`RunViewSerializer`."""
        if self.action == "create":
            return RunStartFormSerializer
        if self.action == "abort":
            return NoBodySerializer
        if self.action == "bulk":
            return RunBulkSerializer
        if self.action == "signal":
            return SignalSerializer
        return RunViewSerializer

    def reply(self, run: Run, status_code: int = status.HTTP_200_OK) -> Response:
        """The run as the request's user may see it."""
        view = RunViewSerializer(run, context=self.get_serializer_context())
        return Response(view.data, status=status_code)

    def get_queryset(self) -> QuerySet[Run]:
        queryset = super().get_queryset()
        if self.action != "list":
            return queryset
        return filter_runs(
            queryset,
            self.request.query_params,
            also_allowed=[
                Pagination.limit_query_param,
                Pagination.offset_query_param,
                api_settings.URL_FORMAT_OVERRIDE,
            ],
        )

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

        The ``Idempotency-Key`` header is the caller's own: two users who happen to pick
        the same key get two runs, and neither may receive the other's run.
        """
        with refusals():
            asked = operations.parse_start(
                request.user, start_input(request), key=request.headers.get(IDEMPOTENCY_HEADER)
            )
            run, created = operations.start_for(request.user, asked)
        return self.reply(run, status.HTTP_201_CREATED if created else status.HTTP_200_OK)

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
        with refusals():
            # An abort asked twice is still one request; only a finished run refuses.
            operations.abort_for(request.user, run)
        run = self.get_queryset().get(pk=run.pk)
        return self.reply(run, status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Send a signal",
        description=(
            "Needs to own the run or django_weft.change_run. A run waiting for a signal of "
            "that name (ctx.wait_for) goes on with its payload; any other unfinished run "
            "keeps it for the wait it comes to. A finished run refuses it (409)."
        ),
        request=SignalSerializer,
        responses={
            202: RunViewSerializer,
            400: BAD_REQUEST,
            403: FORBIDDEN,
            404: OpenApiResponse(description="No such run."),
            409: CONFLICT,
            503: UNAVAILABLE,
        },
    )
    @action(detail=True, methods=["post"])
    def signal(self, request: Request, pk: str | None = None) -> Response:
        """Send a signal to the run; 202, since the run receives it when it waits."""
        run = self.get_object()
        with refusals():
            name, payload = operations.parse_signal(request.data)
            operations.send_signal_for(request.user, run, name, payload)
        run = self.get_queryset().get(pk=run.pk)
        return self.reply(run, status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="Retry, abort or delete many runs",
        description=(
            "The runs named by ids (at most "
            f"{operations.MAX_BULK_IDS}), or every run the run list shows with the given "
            "filter. Each run is judged as its single action judges it (retry: see it in "
            "full, add_run, finished; abort: own it or change_run, unfinished; delete: own "
            "it or delete_run, finished); refused runs are counted by reason, the others "
            "done, in batches of WEFT_BULK_BATCH_SIZE runs, each its own transaction."
        ),
        parameters=[
            OpenApiParameter(
                "kind",
                str,
                OpenApiParameter.PATH,
                enum=list(operations.BULK_ACTIONS),
                description="What to do to each run.",
            )
        ],
        request=RunBulkSerializer,
        responses={200: BulkResultSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 503: UNAVAILABLE},
    )
    @action(detail=False, methods=["post"], url_path=r"bulk/(?P<kind>[^/.]+)", url_name="bulk")
    def bulk(self, request: Request, kind: str) -> Response:
        """Do ``kind`` to each selected run; 200 with what was done and refused."""
        with refusals():
            chosen = operations.parse_action(kind)
            selection = parse_selection(request.data, self.get_queryset())
            result = operations.bulk_for(request.user, chosen, **selection)
        return Response(BulkResultSerializer(result).data)


def start_input(request: Request) -> object:
    """What a start's body asks for: its JSON, or an HTML form's fields (the browsable
    API's) without the token the form carries for the CSRF check, which is no part of
    the start."""
    data = request.data
    if isinstance(data, QueryDict):
        return {name: value for name, value in data.items() if name != CSRF_FORM_FIELD}
    return data

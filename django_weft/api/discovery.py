"""Finding your way around the API: its root, its OpenAPI schema, Swagger UI and Redoc.

The schema and both pages are for whoever may use the API (signed-in users, with the
API's authentication), unless ``WEFT_API_DOCS_PUBLIC = True`` opens them to everyone:
a signed-out visitor gets the API's 401 or 403. The root, which only names addresses,
stays open to everyone.

The schema carries django-weft's title and version unless the project names its own in
``SPECTACULAR_SETTINGS`` (the schema describes every DRF view of the project, so a project
that adds its own may want its own name on it). Swagger UI and Redoc load their scripts
and styles from ``drf-spectacular-sidecar``'s static files, never from a CDN, whatever
``SPECTACULAR_SETTINGS`` says about distributions: the pages work offline, and load
nothing from another site.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.templatetags.static import static
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import APIRootView

import django_weft
from django_weft.api.views import API_PERMISSIONS
from django_weft.conf import weft_settings

TITLE = "django-weft"
DESCRIPTION = (
    "Scheduled jobs and durable job runs: schedules (create, read, edit, delete, run now) "
    "and runs (list, read, start, abort), each in the owner or the guest view."
)
#: Where ``drf-spectacular-sidecar`` keeps the distributions, under ``STATIC_URL``.
SIDECAR = "drf_spectacular_sidecar"


def schema_settings() -> dict[str, Any]:
    """The title, version and description the schema gets, the project's own winning.

    Read from ``settings`` on every request (drf-spectacular reads its own once), so
    ``override_settings`` works as everywhere else.
    """
    project = getattr(settings, "SPECTACULAR_SETTINGS", {})
    chosen = {"TITLE": TITLE, "VERSION": django_weft.__version__, "DESCRIPTION": DESCRIPTION}
    return {name: project.get(name, value) for name, value in chosen.items()}


@extend_schema(exclude=True)
class ApiRootView(APIRootView):
    """django-weft's API: runs and schedules, the OpenAPI schema, Swagger UI and Redoc.

    Every signed-in user may list and read runs and schedules: their own in full, other
    people's in the guest view. Writes need Django's model permissions; a refusal says
    which one is missing.
    """

    # The root only names addresses, so anyone may read it; what lies behind each one
    # checks its own permissions.
    permission_classes = [AllowAny]


class DocsAccess:
    """Who may read the schema and its pages: the API's users, or anyone when public."""

    def get_permissions(self) -> Sequence[BasePermission]:
        if weft_settings.API_DOCS_PUBLIC:
            return [AllowAny()]
        return [permission() for permission in API_PERMISSIONS]


class SchemaView(DocsAccess, SpectacularAPIView):
    """The OpenAPI 3 schema: JSON by default, YAML with ?format=yaml."""

    renderer_classes = [
        OpenApiJsonRenderer,
        OpenApiJsonRenderer2,
        OpenApiYamlRenderer,
        OpenApiYamlRenderer2,
    ]

    @extend_schema(summary="This schema", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # drf-spectacular applies these around the generation only (its own mechanism).
        self.custom_settings = schema_settings()
        response: Response = super().get(request, *args, **kwargs)  # type: ignore[no-untyped-call]
        return response


class SwaggerView(DocsAccess, SpectacularSwaggerView):
    """Swagger UI over the schema, from the sidecar's static files."""

    url_name = "weft-schema"
    title = f"{TITLE} API"

    @staticmethod
    def _swagger_ui_resource(filename: str) -> str:
        return static(f"{SIDECAR}/swagger-ui-dist/{filename}")

    @staticmethod
    def _swagger_ui_favicon() -> str:
        return static(f"{SIDECAR}/swagger-ui-dist/favicon-32x32.png")


class RedocView(DocsAccess, SpectacularRedocView):
    """Redoc over the schema, from the sidecar's static files, in the browser's own fonts.

    The template is drf-spectacular's without its Google Fonts links, and the page's
    Content-Security-Policy keeps images to this site.
    """

    url_name = "weft-schema"
    title = f"{TITLE} API"
    template_name = "django_weft/api/redoc.html"

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response: Response = super().get(request, *args, **kwargs)  # type: ignore[no-untyped-call]
        # Redoc's sidebar always shows its maker's logo from their CDN; a page that loads
        # nothing from elsewhere refuses it (Redoc then leaves the logo out).
        response.setdefault("Content-Security-Policy", "img-src 'self' data: blob:")
        return response

    @staticmethod
    def _redoc_standalone() -> str:
        return static(f"{SIDECAR}/redoc/bundles/redoc.standalone.js")

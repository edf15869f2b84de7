"""The API's URLs; a project includes them under a prefix of its choice.

``include("django_weft.api.urls")`` under ``api/weft/`` serves the API's root (a map of
what follows) at ``api/weft/``, ``api/weft/runs/``, ``api/weft/schedules/``, the OpenAPI
schema at ``api/weft/schema/``, Swagger UI at ``api/weft/schema/swagger-ui/`` and Redoc at
``api/weft/schema/redoc/``. The schema describes every DRF view of the project that
drf-spectacular can see, weft's included.
"""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from django_weft.api.discovery import ApiRootView, RedocView, SchemaView, SwaggerView
from django_weft.api.group_views import GroupViewSet
from django_weft.api.limit_views import LimitViewSet
from django_weft.api.schedule_views import ScheduleViewSet
from django_weft.api.views import RunViewSet
from django_weft.api.workflow_views import WorkflowViewSet

router = SimpleRouter()
router.register("runs", RunViewSet, basename="weft-run")
router.register("schedules", ScheduleViewSet, basename="weft-schedule")
router.register("groups", GroupViewSet, basename="weft-group")
router.register("workflows", WorkflowViewSet, basename="weft-workflow")
router.register("limits", LimitViewSet, basename="weft-limit")

#: What the root lists: a name for each address, and the URL name it reverses.
ROOT = {
    "runs": "weft-run-list",
    "schedules": "weft-schedule-list",
    "groups": "weft-group-list",
    "workflows": "weft-workflow-list",
    "limits": "weft-limit-list",
    "schema": "weft-schema",
    "swagger-ui": "weft-swagger-ui",
    "redoc": "weft-redoc",
}

urlpatterns = [
    path("", ApiRootView.as_view(api_root_dict=ROOT), name="weft-api-root"),
    *router.urls,
    path("schema/", SchemaView.as_view(), name="weft-schema"),
    path("schema/swagger-ui/", SwaggerView.as_view(), name="weft-swagger-ui"),
    path("schema/redoc/", RedocView.as_view(), name="weft-redoc"),
]

"""The API's URLs; a project includes them under a prefix of its choice.

``include("django_weft.api.urls")`` under ``api/weft/`` serves ``api/weft/runs/``,
``api/weft/schedules/`` and the OpenAPI schema at ``api/weft/schema/``. The schema view
describes every DRF view of the project that drf-spectacular can see, weft's included.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import SimpleRouter

from django_weft.api.views import RunViewSet, ScheduleViewSet

router = SimpleRouter()
router.register("runs", RunViewSet, basename="weft-run")
router.register("schedules", ScheduleViewSet, basename="weft-schedule")

urlpatterns = [
    *router.urls,
    path("schema/", SpectacularAPIView.as_view(), name="weft-schema"),
]

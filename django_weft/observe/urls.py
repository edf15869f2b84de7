"""The operators' URLs; a project includes them under a prefix of its choice.

``path("weft/", include("django_weft.observe.urls"))`` serves the metrics at
``weft/metrics/``, readiness at ``weft/health/ready/`` and liveness at
``weft/health/live/`` (docs/metrics.md, docs/deployment.md). Included in the project's
URLs, they are served by ``runjobs --http`` too, where liveness watches the worker loop.
"""

from __future__ import annotations

from django.urls import path

from django_weft.observe import views

urlpatterns = [
    path("metrics/", views.metrics, name="weft-metrics"),
    path("health/ready/", views.ready, name="weft-health-ready"),
    path("health/live/", views.live, name="weft-health-live"),
]

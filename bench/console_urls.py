"""The admin and the API, for ``console_scale.py``."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/weft/", include("django_weft.api.urls")),
]

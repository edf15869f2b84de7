from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from example_project.content import views
from example_project.shell import views as shell_views
from example_project.showcase import views as showcase_views

urlpatterns = [
    path("", views.home, name="home"),
    # Browsers ask every site for /favicon.ico; without it each page logs a 404.
    path("favicon.ico", RedirectView.as_view(url=static("example/favicon.ico"), permanent=True)),
    path("shell/", shell_views.shell, name="shell"),
    path("release/", showcase_views.release, name="release"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/", include("django_weft.api.urls")),
    # Metrics, readiness and liveness (docs/metrics.md, docs/deployment.md).
    path("weft/", include("django_weft.observe.urls")),
    # The browsable API's "Log in" link.
    path("api-auth/", include("rest_framework.urls")),
]

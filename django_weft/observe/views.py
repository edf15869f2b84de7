"""The operators' endpoints: Prometheus metrics, readiness and liveness.

The health views answer anyone (a probe does not sign in) and say little: each check's
name, whether it passed, and a short reason. The metrics answer a scrape with the bearer
token ``WEFT_METRICS_TOKEN`` or a signed-in user with ``django_weft.view_run``
(:func:`django_weft.access.may_read_metrics`), never the public.

They only read (GET and HEAD; anything else is 405), so Django's CSRF check, which would
answer a POST from a probe or a scraper with its HTML 403 before the view could say
405, is not theirs to pass: nothing here changes anything a forged request could want.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from django_weft import access
from django_weft.observe import health

#: What a refused scrape without credentials reads.
NO_CREDENTIALS = (
    "the metrics need a bearer token (WEFT_METRICS_TOKEN) or a signed-in user with "
    f"{access.VIEW_RUN}"
)
#: What a scrape with another token reads.
WRONG_TOKEN = "the bearer token does not match WEFT_METRICS_TOKEN"
#: What a scrape reads where the ``metrics`` extra is not installed.
NOT_INSTALLED = "weft's metrics need prometheus_client: pip install 'django-weft[metrics]'"


def bearer_token(request: HttpRequest) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def metrics_refusal(request: HttpRequest) -> HttpResponse | None:
    """The answer to a scrape that may not read the metrics, or None when it may."""
    user = getattr(request, "user", None) or AnonymousUser()
    token = bearer_token(request)
    if access.may_read_metrics(user, token):
        return None
    if token is not None:
        return HttpResponse(WRONG_TOKEN, status=403, content_type="text/plain")
    if user.is_authenticated:
        refusal = access.refusal("read the metrics", access.VIEW_RUN)
        return HttpResponse(refusal, status=403, content_type="text/plain")
    refused = HttpResponse(NO_CREDENTIALS, status=401, content_type="text/plain")
    refused["WWW-Authenticate"] = 'Bearer realm="weft metrics"'
    return refused


@csrf_exempt
@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """Every weft metric in Prometheus's text format (see docs/metrics.md)."""
    refused = metrics_refusal(request)
    if refused is not None:
        return refused
    try:
        # The ``metrics`` extra is optional: loaded by name, so the health views (and
        # this refusal) work without it.
        exported = importlib.import_module("django_weft.observe.metrics")
    except ImportError as error:
        if error.name != "prometheus_client":
            raise
        return HttpResponse(NOT_INSTALLED, status=501, content_type="text/plain")
    # Installed after this process started: its counters count from this scrape on.
    exported.connect()
    return HttpResponse(exported.exposition(), content_type=exported.CONTENT_TYPE)


def _answer(checks: Mapping[str, health.Check]) -> JsonResponse:
    ok = all(check.ok for check in checks.values())
    body = {
        "status": "ok" if ok else "unavailable",
        "checks": {name: check.as_json() for name, check in checks.items()},
    }
    return JsonResponse(body, status=200 if ok else 503)


@csrf_exempt
@never_cache
@require_safe
def ready(request: HttpRequest) -> JsonResponse:
    """200 when this process can serve: its databases answer, the default one is
    migrated, the channel layer answers; 503 naming what does not."""
    return _answer(health.readiness())


@csrf_exempt
@never_cache
@require_safe
def live(request: HttpRequest) -> JsonResponse:
    """200 while this process works (in ``runjobs``: while its worker loop turns), else 503."""
    return _answer(health.liveness())

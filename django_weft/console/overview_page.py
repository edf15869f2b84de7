"""The overview page: the queues, the workers, the charts, the coming fires and the
failures of the day by error, listed on the admin index and live over the runs socket.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseNotAllowed,
)
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.translation import gettext as _

from django_weft import access, operations
from django_weft.console import history, pages
from django_weft.console.refusals import act
from django_weft.models import Overview
from django_weft.timing import clocks

if TYPE_CHECKING:
    OverviewAdminBase = admin.ModelAdmin[Overview]
else:
    # ModelAdmin is generic only to the type checker.
    OverviewAdminBase = admin.ModelAdmin


class OverviewAdmin(OverviewAdminBase):
    """The overview page, listed on the admin index; live over the runs socket.

    Its page re-reads its own fragment (``live/``) when the socket says a run changed,
    at most once a second, so the page and its first paint are drawn by one template.
    """

    class Media:
        css = {"all": ["django_weft/console.css"]}
        js = ["django_weft/console.js"]

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("", wrap(self.changelist_view), name="django_weft_overview_changelist"),
            path("live/", wrap(self.live_view), name="django_weft_overview_live"),
            path("queues/pause/", wrap(self.pause_view), name="django_weft_overview_pause"),
            path("queues/resume/", wrap(self.resume_view), name="django_weft_overview_resume"),
        ]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.has_perm(access.VIEW_RUN))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def _context(self, request: HttpRequest) -> dict[str, Any]:
        if not self.has_view_permission(request):
            raise PermissionDenied
        span = _chosen(request, "range", history.SPANS, history.DEFAULT_SPAN)
        split = _chosen(request, "split", history.SPLITS, history.DEFAULT_SPLIT)
        overview = pages.overview_context(
            request.user, clocks.now(), timezone.get_current_timezone(), span, split
        )
        return {
            **self.admin_site.each_context(request),
            **overview,
            "opts": self.opts,
            "title": "Overview",
            "subtitle": None,
            "media": self.media,
        }

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        try:
            context = self._context(request) | (extra_context or {})
        except BadChoice as error:
            return HttpResponseBadRequest(str(error))
        return TemplateResponse(request, "admin/django_weft/overview/page.html", context)

    def live_view(self, request: HttpRequest) -> HttpResponse:
        """The overview's figures alone, as the page redraws them."""
        try:
            context = self._context(request)
        except BadChoice as error:
            return HttpResponseBadRequest(str(error))
        return TemplateResponse(request, "admin/django_weft/overview/figures.html", context)

    def pause_view(self, request: HttpRequest) -> HttpResponse:
        return self._queue_action(request, pause=True)

    def resume_view(self, request: HttpRequest) -> HttpResponse:
        return self._queue_action(request, pause=False)

    def _queue_action(self, request: HttpRequest, *, pause: bool) -> HttpResponse:
        """Pause or resume the queue a POST names, through the service layer."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        queue = request.POST.get("queue", "").strip()
        if not queue:
            name_it = _("Name the queue to pause.") if pause else _("Name the queue to resume.")
            self.message_user(request, name_it, messages.ERROR)
            return redirect("admin:django_weft_overview_changelist")
        action = operations.pause_queue_for if pause else operations.resume_queue_for
        what = (_("pause queue %(queue)s") if pause else _("resume queue %(queue)s")) % {
            "queue": queue
        }
        changed = act(self, request, what, lambda: action(request.user, queue))
        if changed is not None:
            done = (
                _("Paused queue %(queue)s: no worker claims its runs until it is resumed.")
                if pause
                else _("Resumed queue %(queue)s: workers claim its runs again.")
            )
            same = (
                _("Queue %(queue)s was paused already.")
                if pause
                else _("Queue %(queue)s was not paused already.")
            )
            said = (done if changed else same) % {"queue": queue}
            self.message_user(request, said, messages.SUCCESS)
        return redirect("admin:django_weft_overview_changelist")


class BadChoice(ValueError):
    """The address asks for a range or split the overview does not offer."""


def _chosen(request: HttpRequest, name: str, choices: Mapping[str, Any], default: str) -> str:
    """The choice the address makes for ``name``; a 400 naming it for any other value."""
    value = request.GET.get(name, default)
    if value not in choices:
        raise BadChoice(
            _("%(name)s must be one of %(choices)s, not %(value)r.")
            % {"name": name, "choices": ", ".join(choices), "value": value}
        )
    return value

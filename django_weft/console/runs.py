"""The run pages: the list, live and sized for a laptop, with its abort action; a run's
page, the console's own (its output as a terminal, its attempts and steps, *abort*,
*retry* and *send signal*).

What a user sees of a run is :func:`django_weft.console.pages.run_context`'s, what the
list searches and filters for them :mod:`django_weft.console.visibility`'s, and every
action goes through :mod:`django_weft.operations`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_weft import operations
from django_weft.console import bulk_actions, formatting, pages, visibility
from django_weft.console.counting import EstimatedCountPaginator
from django_weft.console.failures import ErrorFilter
from django_weft.console.phases import PhaseFilter
from django_weft.console.refusals import act
from django_weft.console.run_filters import JobFilter, QueueFilter
from django_weft.live import projections
from django_weft.models import Run
from django_weft.timing import clocks

if TYPE_CHECKING:
    RunAdminBase = admin.ModelAdmin[Run]
else:
    # ModelAdmin is generic only to the type checker.
    RunAdminBase = admin.ModelAdmin


class RunAdmin(RunAdminBase):
    """The run list updates live and fits a laptop's screen; a run's page is the console's
    run page (its output as a terminal, its attempts, *abort* and *retry*), not a form."""

    list_display = ["short_id", "job", "phase", "queue", "started_by", "created", "length"]
    list_display_links = ["short_id"]
    # No filter or drill-down reads the run table to list its choices, and no count
    # reads it whole (docs/benchmarks.md: ten million runs): the jobs and queues come from
    # the code and the history, the dates are ranges, the count is estimated.
    list_filter = [PhaseFilter, JobFilter, QueueFilter, ErrorFilter, "owner", "created_at"]
    list_select_related = ["owner", "schedule"]
    search_fields = [*visibility.PUBLIC_RUN_SEARCH, *visibility.PRIVATE_RUN_SEARCH]
    actions = ["retry_action", "abort_action", "delete_action"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    class Media:
        css = {"all": ["django_weft/console.css"]}
        js = ["django_weft/console.js"]

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/abort/", wrap(self.abort_view), name="django_weft_run_abort"),
            path("<path:object_id>/retry/", wrap(self.retry_view), name="django_weft_run_retry"),
            path("<path:object_id>/signal/", wrap(self.signal_view), name="django_weft_run_signal"),
            *super().get_urls(),
        ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        return super().get_queryset(request).select_related("owner", "schedule", "state", "worker")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        return False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Run], search_term: str
    ) -> tuple[QuerySet[Run], bool]:
        """Args and keys are searched only among runs the viewer sees in full."""
        if visibility.sees_every_run_in_full(request.user):
            return super().get_search_results(request, queryset, search_term)
        return visibility.search_runs(queryset, search_term, request.user), False

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        """Filters in the address read only what the viewer sees of every run (any other
        is refused with a 400, as the admin refuses a lookup it does not allow)."""
        if not visibility.sees_every_run_in_full(request.user) and not visibility.filters_only(
            lookup, visibility.GUEST_RUN_FIELDS
        ):
            return False
        return super().lookup_allowed(lookup, value, request)

    @admin.display(description=gettext_lazy("id"), ordering="id")
    def short_id(self, run: Run) -> str:
        return format_html("<code title='{}'>{}</code>", run.pk, formatting.short_id(run.pk))

    @admin.display(description=gettext_lazy("phase"))
    def phase(self, run: Run) -> str:
        phase = projections.phase(run)
        return format_html("<span class='weft-phase weft-phase-{}'>{}</span>", phase, phase)

    @admin.display(description=gettext_lazy("started by"))
    def started_by(self, run: Run) -> str:
        """The schedule that fired the run, or the user who started it: one narrow column."""
        if run.schedule is not None:
            return format_html(
                "<span class='weft-quiet'>{}</span> {}", _("schedule"), run.schedule.name
            )
        return run.owner.get_username() if run.owner is not None else "-"

    @admin.display(description=gettext_lazy("created"), ordering="created_at")
    def created(self, run: Run) -> str:
        """The date over the time and zone: the list keeps room for every column at 1280 px."""
        day, clock = formatting.moment(run.created_at, timezone.get_current_timezone()).split(
            " ", 1
        )
        return format_html("{}<br>{}", day, clock)

    @admin.display(description=gettext_lazy("duration"))
    def length(self, run: Run) -> str:
        """How long the run ran, or has run so far: to the process's one clock (a driven
        clock gives every row the same now; the machine's, rows microseconds apart),
        ticking on in the browser while it runs."""
        return formatting.length_html(run.started_at, run.finished_at, clocks.now())

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The run page: read-only, so no form and no Save button."""
        run = self._run(request, object_id)
        if not self.has_view_permission(request, run):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            **pages.run_context(request.user, run, clocks.now(), timezone.get_current_timezone()),
            "opts": self.opts,
            "title": f"{run.job} {formatting.short_id(run.pk)}",
            "subtitle": None,
            "has_view_permission": True,
            "media": self.media,
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/django_weft/run/page.html", context)

    def _run(self, request: HttpRequest, object_id: str) -> Run:
        run = self.get_object(request, unquote(object_id))
        if run is None:
            raise Http404(_("there is no run %(run)s") % {"run": object_id})
        return run

    def abort_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """*Abort* on the run page: a POST, decided by the service layer."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self._run(request, object_id)
        requested = act(
            self,
            request,
            _("run %(run)s") % {"run": run.pk},
            lambda: operations.abort_for(request.user, run),
        )
        if requested is not None:
            self.message_user(
                request,
                (
                    _("Abort requested for run %(run)s: it stops at its next sleep() or check().")
                    if requested
                    else _("Abort of run %(run)s was requested already.")
                )
                % {"run": run.pk},
                messages.SUCCESS,
            )
        return redirect("admin:django_weft_run_change", run.pk)

    def signal_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """*Send signal* on the run page: its name, and a payload written as JSON (empty:
        null); decided by the service layer."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self._run(request, object_id)
        what = _("signal run %(run)s") % {"run": run.pk}
        text = request.POST.get("payload", "").strip()
        try:
            payload = json.loads(text) if text else None
        except ValueError as error:
            self.message_user(
                request,
                _("%(what)s: the payload is not JSON: %(error)s") % {"what": what, "error": error},
                messages.ERROR,
            )
            return redirect("admin:django_weft_run_change", run.pk)
        name = request.POST.get("name", "")
        sent = act(
            self,
            request,
            what,
            lambda: operations.send_signal_for(request.user, run, name, payload),
        )
        if sent is not None:
            self.message_user(
                request,
                _('Signal "%(name)s" sent to run %(run)s.') % {"name": name, "run": run.pk},
                messages.SUCCESS,
            )
        return redirect("admin:django_weft_run_change", run.pk)

    def retry_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """*Retry* on the run page: a new run with the same args, owned by whoever retries."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self._run(request, object_id)
        retried = act(
            self,
            request,
            _("retry run %(run)s") % {"run": run.pk},
            lambda: operations.retry_for(request.user, run),
        )
        if retried is None:
            return redirect("admin:django_weft_run_change", run.pk)
        self.message_user(
            request,
            _("Run %(run)s retried as run %(retried)s.") % {"run": run.pk, "retried": retried.pk},
            messages.SUCCESS,
        )
        return redirect("admin:django_weft_run_change", retried.pk)

    def has_bulk_permission(self, request: HttpRequest) -> bool:
        """Anyone signed in may act on their own runs; each run is judged by the service
        layer (change_run aborts anyone's, delete_run deletes anyone's)."""
        return bool(request.user.is_authenticated)

    @admin.action(description=bulk_actions.LABELS["retry"], permissions=["bulk"])
    def retry_action(self, request: HttpRequest, queryset: QuerySet[Run]) -> HttpResponse | None:
        return bulk_actions.run_bulk_action(self, request, queryset, "retry")

    @admin.action(description=bulk_actions.LABELS["abort"], permissions=["bulk"])
    def abort_action(self, request: HttpRequest, queryset: QuerySet[Run]) -> HttpResponse | None:
        return bulk_actions.run_bulk_action(self, request, queryset, "abort")

    @admin.action(description=bulk_actions.LABELS["delete"], permissions=["bulk"])
    def delete_action(self, request: HttpRequest, queryset: QuerySet[Run]) -> HttpResponse | None:
        return bulk_actions.run_bulk_action(self, request, queryset, "delete")

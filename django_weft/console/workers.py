"""The worker processes' pages: rows the workers write themselves, read here, never
edited or deleted (``prunejobs`` deletes the rows of workers that stopped long ago).

The one thing an operator changes is whether a running worker takes new work: *Quiet*
and *Resume* on its page go through :func:`django_weft.operations.quiet_worker_for`,
which decides who may (``quiet_workerprocess``) and puts it on the audit trail; the
worker reads the flag at its next heartbeat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_weft import access, operations
from django_weft.conf import weft_settings
from django_weft.console.moment_columns import moment_column
from django_weft.console.refusals import act
from django_weft.models import RunStatus, WorkerProcess

if TYPE_CHECKING:
    WorkerProcessAdminBase = admin.ModelAdmin[WorkerProcess]
else:
    # ModelAdmin is generic only to the type checker.
    WorkerProcessAdminBase = admin.ModelAdmin


class WorkerProcessAdmin(WorkerProcessAdminBase):
    """Each ``runjobs`` process: when it started and last beat, the runs it holds, and
    whether it is quiet, with the buttons that quiet and resume it."""

    list_display = ["__str__", "started", "beat", "stopped", "running", "quiet"]
    list_filter = ["quiet"]
    fields = readonly_fields = ("hostname", "pid", "started", "beat", "stopped", "quiet")
    ordering = ["-last_beat"]
    change_form_template = "admin/django_weft/workerprocess/change_form.html"
    started = moment_column("started_at", gettext_lazy("started"))
    beat = moment_column("last_beat", gettext_lazy("last beat"))
    stopped = moment_column("stopped_at", gettext_lazy("stopped"))

    class Media:
        css = {"all": ["django_weft/console.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkerProcess]:
        held = Count("runs", filter=Q(runs__status=RunStatus.RUNNING))
        return super().get_queryset(request).annotate(running_runs=held)

    @admin.display(description=gettext_lazy("running"), ordering="running_runs")
    def running(self, worker: WorkerProcess) -> int:
        return int(getattr(worker, "running_runs", 0))

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<path:object_id>/quiet/",
                self.admin_site.admin_view(self.quiet_view),
                name="django_weft_workerprocess_quiet",
            ),
            path(
                "<path:object_id>/resume/",
                self.admin_site.admin_view(self.resume_view),
                name="django_weft_workerprocess_resume",
            ),
            *super().get_urls(),
        ]

    def quiet_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._quiet(request, unquote(object_id), quiet=True)

    def resume_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._quiet(request, unquote(object_id), quiet=False)

    def _quiet(self, request: HttpRequest, worker_id: str, *, quiet: bool) -> HttpResponse:
        """Quiet or resume the worker through the service layer; a refusal is a message."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        what = (_("quiet worker %(worker)s") if quiet else _("resume worker %(worker)s")) % {
            "worker": worker_id
        }
        user = request.user
        changed = act(
            self,
            request,
            what,
            lambda: operations.quiet_worker_for(user, worker_id, quiet=quiet),
        )
        if changed is not None:
            beat = {"seconds": f"{weft_settings.HEARTBEAT_INTERVAL:g}"}
            if quiet:
                said = (
                    _(
                        "Quieted: at its next heartbeat (within %(seconds)s s) the worker "
                        "stops claiming runs and firing schedules; it finishes the runs it holds."
                    )
                    if changed
                    else _("The worker was quiet already.")
                )
            else:
                said = (
                    _("Resumed: at its next heartbeat (within %(seconds)s s) it claims runs again.")
                    if changed
                    else _("The worker was not quiet.")
                )
            self.message_user(request, said % beat, messages.SUCCESS)
        return HttpResponseRedirect(
            reverse(
                f"{self.admin_site.name}:django_weft_workerprocess_change", args=[quote(worker_id)]
            )
        )

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: WorkerProcess | None = None,
    ) -> HttpResponse:
        """The page, with *Quiet* or *Resume* for a running worker and those who may."""
        if (
            obj is not None
            and obj.stopped_at is None
            and request.user.has_perm(access.QUIET_WORKER)
        ):
            name = "resume" if obj.quiet else "quiet"
            context["weft_quiet_action"] = name
            context["weft_quiet_url"] = reverse(
                f"{self.admin_site.name}:django_weft_workerprocess_{name}", args=[quote(obj.pk)]
            )
        return super().render_change_form(request, context, add, change, form_url, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: WorkerProcess | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: WorkerProcess | None = None) -> bool:
        return False

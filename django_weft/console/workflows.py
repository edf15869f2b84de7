"""Workflows in the console: each workflow's graph (its steps in layers, each with its
phase, run and duration), *retry step* on a step that did not end done, *abort*, and
*start a workflow* (:mod:`django_weft.console.workflow_start`), all through the service
layer.

Workflows are written by their starts and their steps' finishes, never here: the page is
read-only, as a run's is. A step's run links to its run page, where a guest sees what
the run list shows them.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_weft import access, operations
from django_weft.console import formatting, workflow_start
from django_weft.console.flow_pages import FlowPage
from django_weft.console.moment_columns import moment_column
from django_weft.console.refusals import act
from django_weft.live import projections
from django_weft.models import Workflow, WorkflowStep
from django_weft.timing import clocks

if TYPE_CHECKING:
    WorkflowAdminBase = admin.ModelAdmin[Workflow]
else:
    WorkflowAdminBase = admin.ModelAdmin


def layers(steps: list[WorkflowStep]) -> list[list[WorkflowStep]]:
    """The steps in layers: each step one layer below the deepest step it depends on,
    so that a layer's steps may run side by side."""
    depth: dict[str, int] = {}
    for step in sorted(steps, key=lambda each: each.position):
        depth[step.name] = 1 + max((depth[name] for name in step.depends_on), default=-1)
    found: list[list[WorkflowStep]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for step in sorted(steps, key=lambda each: each.position):
        found[depth[step.name]].append(step)
    return found


class WorkflowAdmin(FlowPage, WorkflowAdminBase):
    """A workflow's page and list: read-only, with retry-step buttons and the abort action."""

    list_display = ["__str__", "owner", "status", "progress", "created", "ended"]
    list_filter = ["status", "name", "created_at"]
    search_fields = ["name"]
    fields = readonly_fields = (
        "name",
        "version",
        "owner",
        "status",
        "progress",
        "graph",
        "callback",
        "created",
        "ended",
    )
    actions = ["abort_action"]
    change_form_template = "admin/django_weft/workflow/change_form.html"
    change_list_template = "admin/django_weft/workflow/change_list.html"
    created = moment_column("created_at", gettext_lazy("created"))
    ended = moment_column("ended_at", gettext_lazy("ended"))

    class Media:
        css = {"all": ["django_weft/console.css"]}
        js = ["django_weft/console.js"]  # the running steps' durations tick

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("start/", wrap(self.start_view), name="django_weft_workflow_start"),
            path(
                "<path:object_id>/steps/<str:step>/retry/",
                wrap(self.retry_step_view),
                name="django_weft_workflow_retry_step",
            ),
            *super().get_urls(),
        ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Workflow]:
        return super().get_queryset(request).select_related("owner")

    @admin.display(description=gettext_lazy("progress"))
    def progress(self, workflow: Workflow) -> str:
        ended = workflow.total - workflow.unfinished
        share = round(100 * ended / workflow.total) if workflow.total else 100
        return format_html(
            "<progress max='100' value='{}' aria-label='{}'></progress> {}",
            share,
            _("steps ended"),
            _("%(ended)s of %(total)s steps ended") % {"ended": ended, "total": workflow.total},
        )

    @admin.display(description=gettext_lazy("steps"))
    def graph(self, workflow: Workflow) -> str:
        """The steps in layers, each layer's steps side by side; a step says its phase,
        what it waits for, its run and how long it took."""
        steps = list(workflow.steps.select_related("run", "group").order_by("position"))
        return format_html(
            "<ol class='weft-graph'>{}</ol>",
            format_html_join(
                "",
                "<li><ul class='weft-graph-layer'>{}</ul></li>",
                (
                    (format_html_join("", "{}", ((self._step(s),) for s in layer)),)
                    for layer in layers(steps)
                ),
            ),
        )

    def _step(self, step: WorkflowStep) -> str:
        run = step.run
        phase = projections.phase(run) if run is not None else "lost"
        after = (
            format_html(
                "<span class='weft-quiet'>{} {}</span>", _("after"), ", ".join(step.depends_on)
            )
            if step.depends_on
            else ""
        )
        link = (
            format_html(
                "<a href='{}'><code>{}</code></a> {}",
                reverse("admin:django_weft_run_change", args=[run.pk]),
                formatting.short_id(run.pk),
                formatting.length_html(run.started_at, run.finished_at, clocks.now()),
            )
            if run is not None
            else "-"
        )
        return format_html(
            "<li class='weft-graph-step' data-step='{}'><strong>{}</strong> "
            "<span class='weft-phase weft-phase-{}'>{}</span>{} {} {}{}</li>",
            step.name,
            step.name,
            phase,
            phase,
            format_html(" <span class='weft-quiet'>{}</span>", _("runs anyway"))
            if step.runs_anyway
            else "",
            after,
            link,
            self._group(step),
        )

    def _group(self, step: WorkflowStep) -> str:
        """A group step's members: how many ended, linked to its group's page."""
        if not step.fans_out:
            return ""
        group = step.group
        if group is None:
            return format_html(
                " <span class='weft-quiet'>{}</span>", _("a group, once its dependencies end")
            )
        ended = _("%(ended)s of %(total)s members ended") % {
            "ended": group.total - group.unfinished,
            "total": group.total,
        }
        failed = group.failed + group.aborted + group.lost
        if failed:
            ended += ", " + _("%(failed)s failed") % {"failed": failed}
        return format_html(
            " <a class='weft-step-group' href='{}'>{}</a>",
            reverse("admin:django_weft_group_change", args=[group.pk]),
            ended,
        )

    @admin.display(description=gettext_lazy("on-end run"))
    def callback(self, workflow: Workflow) -> str:
        if workflow.callback_run_id is None:
            return "-"
        url = reverse("admin:django_weft_run_change", args=[workflow.callback_run_id])
        return format_html("<a href='{}'><code>{}</code></a>", url, workflow.callback_run_id)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The page, with a retry button for each step that ended other than done (the
        service layer decides, when it is pressed, whether the step may be retried)."""
        workflow = Workflow.objects.filter(pk=object_id).first()
        retriable = []
        if workflow is not None and access.may_change_workflow(request.user, workflow):
            for step in workflow.steps.select_related("run").order_by("position"):
                if step.run is not None and step.run.is_finished and step.run.status != "done":
                    url = reverse(
                        "admin:django_weft_workflow_retry_step", args=[workflow.pk, step.name]
                    )
                    retriable.append((step.name, url))
        context = {**(extra_context or {}), "weft_retriable_steps": retriable}
        return super().change_view(request, object_id, form_url, context)

    def start_view(self, request: HttpRequest) -> HttpResponse:
        """*Start a workflow*: see :mod:`django_weft.console.workflow_start`."""
        return workflow_start.start_view(self, request)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The list, with *Start a workflow* for those who may start runs."""
        context = {**(extra_context or {}), "weft_may_start": access.may_start_runs(request.user)}
        return super().changelist_view(request, context)

    def retry_step_view(self, request: HttpRequest, object_id: str, step: str) -> HttpResponse:
        """*Retry step* on the workflow's page: the step again, and what did not end
        done below it."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        workflow = get_object_or_404(Workflow, pk=object_id)
        run = act(
            self,
            request,
            _("retry step %(step)s") % {"step": step},
            partial(operations.retry_step_for, request.user, workflow, step),
        )
        if run is not None:
            self.message_user(
                request,
                _("Step %(step)s retried as run %(run)s.") % {"step": step, "run": run.pk},
                messages.SUCCESS,
            )
        return redirect("admin:django_weft_workflow_change", workflow.pk)

    @admin.action(description=gettext_lazy("Abort selected workflows"))
    def abort_action(self, request: HttpRequest, queryset: QuerySet[Workflow]) -> None:
        for workflow in queryset:
            asked = act(
                self,
                request,
                _("abort workflow %(workflow)s") % {"workflow": workflow},
                partial(operations.abort_workflow_for, request.user, workflow),
            )
            if asked is not None:
                self.message_user(
                    request,
                    _("%(workflow)s: abort requested for %(count)s steps.")
                    % {"workflow": workflow, "count": asked},
                    messages.SUCCESS,
                )

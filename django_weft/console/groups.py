"""Groups in the console: each group's progress (its members by outcome, as a bar) and
the run its end started; *abort* and *seal* through the service layer.

Groups are written by their starts and their members' finishes, never here: the page is
read-only, as a run's is. Its members are the run list filtered by the group, which a
guest may use too (a run's group is in its guest view).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_weft import operations
from django_weft.console.flow_pages import FlowPage
from django_weft.console.moment_columns import moment_column
from django_weft.console.refusals import act
from django_weft.models import Group

if TYPE_CHECKING:
    GroupAdminBase = admin.ModelAdmin[Group]
else:
    GroupAdminBase = admin.ModelAdmin


class GroupAdmin(FlowPage, GroupAdminBase):
    """A group's page and list: read-only, with the abort and seal actions."""

    list_display = ["__str__", "owner", "progress", "condition", "state", "created"]
    list_filter = ["condition", "created_at"]
    search_fields = ["name"]
    fields = readonly_fields = (
        "name",
        "owner",
        "condition",
        "state",
        "progress",
        "member_runs",
        "callback",
        "workflow_step_link",
        "created",
        "sealed",
        "ended",
    )
    actions = ["abort_action", "seal_action"]
    created = moment_column("created_at", gettext_lazy("created"))
    sealed = moment_column("sealed_at", gettext_lazy("sealed"))
    ended = moment_column("ended_at", gettext_lazy("ended"))

    class Media:
        css = {"all": ["django_weft/console.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Group]:
        return super().get_queryset(request).select_related("owner")

    @admin.display(description=gettext_lazy("progress"))
    def progress(self, group: Group) -> str:
        """Ended members of all, and the outcomes, e.g. ``7 of 10: 6 done, 1 failed``."""
        ended = group.total - group.unfinished
        outcomes = ", ".join(
            f"{count} {name}"
            for name, count in (
                ("done", group.done),
                ("failed", group.failed),
                ("aborted", group.aborted),
                ("lost", group.lost),
            )
            if count
        )
        share = round(100 * ended / group.total) if group.total else 100
        return format_html(
            "<progress max='100' value='{}' aria-label='{}'></progress> {}",
            share,
            _("members ended"),
            _("%(ended)s of %(total)s") % {"ended": ended, "total": group.total}
            + (f": {outcomes}" if outcomes else ""),
        )

    @admin.display(description=gettext_lazy("state"))
    def state(self, group: Group) -> str:
        if group.has_ended:
            return _("ended")
        return _("sealed") if group.is_sealed else _("open")

    @admin.display(description=gettext_lazy("members"))
    def member_runs(self, group: Group) -> str:
        url = reverse("admin:django_weft_run_changelist") + f"?group__id__exact={group.pk}"
        return format_html("<a href='{}'>{}</a>", url, _("%(total)s runs") % {"total": group.total})

    @admin.display(description=gettext_lazy("callback run"))
    def callback(self, group: Group) -> str:
        if group.callback_run_id is None:
            return "-"
        url = reverse("admin:django_weft_run_change", args=[group.callback_run_id])
        return format_html("<a href='{}'><code>{}</code></a>", url, group.callback_run_id)

    @admin.display(description=gettext_lazy("workflow step"))
    def workflow_step_link(self, group: Group) -> str:
        """The workflow step whose members these are (its run is the callback)."""
        step = getattr(group, "workflow_step", None)
        if step is None:
            return "-"
        url = reverse("admin:django_weft_workflow_change", args=[step.workflow_id])
        return format_html(
            "<a href='{}'>{}</a>",
            url,
            _("step %(step)s of workflow %(workflow)s")
            % {"step": step.name, "workflow": step.workflow.name},
        )

    @admin.action(description=gettext_lazy("Abort selected groups"))
    def abort_action(self, request: HttpRequest, queryset: QuerySet[Group]) -> None:
        for group in queryset:
            asked = act(
                self,
                request,
                _("abort group %(group)s") % {"group": group},
                partial(operations.abort_group_for, request.user, group),
            )
            if asked is not None:
                self.message_user(
                    request,
                    _("%(group)s: abort requested for %(count)s runs.")
                    % {"group": group, "count": asked},
                    messages.SUCCESS,
                )

    @admin.action(description=gettext_lazy("Seal selected groups"))
    def seal_action(self, request: HttpRequest, queryset: QuerySet[Group]) -> None:
        for group in queryset:
            sealed = act(
                self,
                request,
                _("seal group %(group)s") % {"group": group},
                partial(operations.seal_group_for, request.user, group),
            )
            if sealed is not None:
                self.message_user(
                    request,
                    (_("%(group)s sealed.") if sealed else _("%(group)s was sealed already."))
                    % {"group": group},
                    messages.SUCCESS,
                )

"""The schedule pages: the list and its actions, the page with its buttons, the endpoints
its script asks for the next fires and the args' inputs.

Every write goes through :mod:`django_weft.operations`. A save or a delete it refuses is
shown as a refusal (see :mod:`django_weft.console.refusals`): the form again with the
refusal on it, or an error message; nothing is logged as changed.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    JsonResponse,
)
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from django_weft import access, operations
from django_weft.console import refusals, schedule_layout, visibility
from django_weft.console.audit import HistoryFromOperations
from django_weft.console.plan_preview import fires_preview, invalid_preview
from django_weft.console.refusals import act
from django_weft.console.schedule_columns import ScheduleColumns
from django_weft.console.schedule_form import ArgsField, ScheduleForm
from django_weft.models import Schedule
from django_weft.models.schedule import PLAN_FIELDS, SCHEDULER_FIELDS
from django_weft.timing import clocks

if TYPE_CHECKING:
    ScheduleAdminBase = admin.ModelAdmin[Schedule]
else:
    # ModelAdmin is generic only to the type checker.
    ScheduleAdminBase = admin.ModelAdmin

#: The schedule page's buttons, each one POST through the service layer.
SCHEDULE_BUTTONS = {
    "run-now": gettext_lazy("Run now"),
    "pause": gettext_lazy("Pause"),
    "resume": gettext_lazy("Resume"),
}


class ScheduleAdmin(
    refusals.RefusalsOnTheForm,
    refusals.RefusedDeletesOnThePage,
    HistoryFromOperations,
    ScheduleColumns,
    ScheduleAdminBase,
):
    list_display = [
        "name",
        "job",
        "plan",
        "next_due_at",
        "last_status",
        "last_error",
        "missed",
    ]
    list_filter = ["enabled", "last_status", "job"]
    search_fields = ["name", "job"]
    actions = ["run_now_action", "enable_action", "disable_action"]
    form = ScheduleForm
    change_form_template = "admin/django_weft/schedule/change_form.html"
    readonly_fields = [
        "owner",
        "parked_because",
        "plan",
        "state",
        "next_fires",
        "recent_runs",
        "next_due_at",
        "last_due_at",
        "last_started_at",
        "last_ended_at",
        *sorted(SCHEDULER_FIELDS - {"armed", "buffered_due"}),
    ]

    def get_fieldsets(
        self, request: HttpRequest, obj: Schedule | None = None
    ) -> schedule_layout.Fieldsets:
        return schedule_layout.fieldsets(obj)

    class Media:
        css = {"all": ["django_weft/console.css", "django_weft/schedule.css"]}
        js = ["django_weft/console.js"]  # how far off the next due is, ticking

    # -- the page's endpoints ---------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("fires/", wrap(self.fires_view), name="django_weft_schedule_fires_new"),
            path(
                "<path:object_id>/fires/",
                wrap(self.fires_view),
                name="django_weft_schedule_fires",
            ),
            path("args/", wrap(self.args_view), name="django_weft_schedule_args_new"),
            path("<path:object_id>/args/", wrap(self.args_view), name="django_weft_schedule_args"),
            *(
                path(
                    f"<path:object_id>/{button}/",
                    wrap(self.button_view),
                    {"button": button},
                    name=_button_url_name(button),
                )
                for button in SCHEDULE_BUTTONS
            ),
            *super().get_urls(),
        ]

    def fires_view(self, request: HttpRequest, object_id: str | None = None) -> JsonResponse:
        """The next fires of the form's unsaved plan, for the page to show as it is typed.

        Allowed to whoever may see the page it serves: that schedule's change page, or
        the add page. While a field of the plan has an error: no fires, the errors.
        """
        obj = self._page_object(request, object_id)
        if not (
            self.has_add_permission(request)
            if obj is None
            else self.has_view_or_change_permission(request, obj)
        ):
            raise PermissionDenied
        schedule = obj if obj is not None else Schedule()
        form_class = self.get_form(request, obj, change=obj is not None, fields=PLAN_FIELDS)
        form = form_class(request.GET, instance=schedule)
        if any(name in form.fields for name in PLAN_FIELDS):  # not a read-only page
            if not form.is_valid():
                errors = {name: [str(m) for m in texts] for name, texts in form.errors.items()}
                return JsonResponse(invalid_preview(schedule).as_json(errors))
            if any(name in form.changed_data for name in PLAN_FIELDS):
                schedule.armed = False  # once saved, the row is armed afresh from now
        return JsonResponse(fires_preview(schedule, clocks.now()).as_json())

    def args_view(self, request: HttpRequest, object_id: str | None = None) -> JsonResponse:
        """The args' inputs of the job named in ``?job=``, for the page to swap in when
        another job is picked. Allowed to whoever may edit the page it serves."""
        obj = self._page_object(request, object_id)
        if not (
            self.has_add_permission(request)
            if obj is None
            else self.has_change_permission(request, obj)
        ):
            raise PermissionDenied
        field = ArgsField()
        field.use_job(request.GET.get("job", ""))
        return JsonResponse({"html": field.widget.render("args", None, {"id": "id_args"})})

    def button_view(self, request: HttpRequest, object_id: str, button: str) -> HttpResponse:
        """*Run now*, *pause*, *resume*: the service layer decides, refusals become messages."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        schedule = self._page_object(request, object_id)
        assert schedule is not None
        user = request.user
        if button == "run-now":
            run = act(self, request, str(schedule), lambda: operations.run_now_for(user, schedule))
            if run is not None:
                self.message_user(
                    request,
                    format_html(
                        _("Started run <a href='{}'>{}</a>."),
                        reverse(f"{self.admin_site.name}:django_weft_run_change", args=[run.pk]),
                        run.pk,
                    ),
                    messages.SUCCESS,
                )
        else:
            enabled = button == "resume"
            count = act(
                self,
                request,
                str(schedule),
                lambda: operations.set_enabled_for(user, [schedule], enabled=enabled),
            )
            if count is not None:
                self.message_user(request, _toggled(schedule, enabled), messages.SUCCESS)
        return HttpResponseRedirect(refusals.change_url(self, schedule.pk))

    def _page_object(self, request: HttpRequest, object_id: str | None) -> Schedule | None:
        if object_id is None:
            return None
        schedule = self.get_object(request, unquote(object_id))
        if schedule is None:
            raise Http404(f"no schedule {object_id}")
        return schedule

    # -- the page ---------------------------------------------------------------------------

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Schedule | None = None,
    ) -> HttpResponse:
        """The page with its buttons, and where its script asks for the next fires."""
        site = self.admin_site.name
        if obj is None:
            editable = self.has_add_permission(request)
            fires_url = reverse(f"{site}:django_weft_schedule_fires_new")
            args_url = reverse(f"{site}:django_weft_schedule_args_new")
        else:
            editable = self.has_change_permission(request, obj)
            fires_url = reverse(f"{site}:django_weft_schedule_fires", args=[quote(obj.pk)])
            args_url = reverse(f"{site}:django_weft_schedule_args", args=[quote(obj.pk)])
        buttons: list[str] = []
        if obj is not None and editable:
            buttons = ["run-now"] if self.has_run_permission(request) else []
            buttons.append("pause" if obj.enabled else "resume")
            if obj.enabled and obj.owner_removed:
                buttons.append("resume")  # takes it over as the presser's: *enable* un-parks it
        context["weft_buttons"] = [
            (
                reverse(f"{site}:{_button_url_name(button)}", args=[quote(obj.pk)]),
                SCHEDULE_BUTTONS[button],
                button,
            )
            for button in buttons
            if obj is not None
        ]
        context["weft_fires_url"] = fires_url if editable else ""
        context["weft_args_url"] = args_url if editable else ""
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        """Through the service layer: who may write, and who the schedule runs as.

        A refusal is raised (:class:`~django_weft.console.refusals.Refused`), so that
        Django neither logs the change nor says it was made.
        """
        user = request.user
        if change:
            changed = {name: form.cleaned_data[name] for name in form.changed_data}
            stored = Schedule.objects.get(pk=obj.pk)
            refusals.refused(lambda: operations.edit_schedule_for(user, stored, changed))
            return
        fields = {name: form.cleaned_data[name] for name in form.cleaned_data}
        obj.pk = refusals.refused(lambda: operations.create_schedule_for(user, fields)).pk

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        refusals.refused(lambda: operations.delete_schedule_for(request.user, obj))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        """*Delete selected schedules*, each through the service layer (and on record):
        all of them, or none and a 403 naming the refusal."""
        try:
            with transaction.atomic():
                for schedule in queryset:
                    delete = partial(operations.delete_schedule_for, request.user, schedule)
                    refusals.refused(delete)
        except refusals.Refused as refused:
            raise PermissionDenied(str(refused)) from refused

    # -- who may do what --------------------------------------------------------------------

    def get_list_display(self, request: HttpRequest) -> Any:
        """No last error for a viewer who sees other people's schedules as a guest."""
        if visibility.sees_every_schedule_in_full(request.user):
            return self.list_display
        return [column for column in self.list_display if column != "last_error"]

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        """Filters in the address read only what the viewer sees of every schedule (a
        match on its args would tell them a prefix at a time); another is a 400."""
        if not visibility.sees_every_schedule_in_full(request.user) and not (
            visibility.filters_only(lookup, visibility.GUEST_SCHEDULE_FIELDS)
        ):
            return False
        return super().lookup_allowed(lookup, value, request)

    def has_change_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        # A schedule's owner changes it without the model permission, as the API allows.
        return (
            obj is not None and access.owns(request.user, obj)
        ) or super().has_change_permission(request, obj)

    def has_run_permission(self, request: HttpRequest) -> bool:
        """*Run now* starts runs: the action shows to those who may start runs."""
        return access.may_start_runs(request.user)

    # -- the list's actions -----------------------------------------------------------------

    @admin.action(description=gettext_lazy("Run selected schedules now"), permissions=["run"])
    def run_now_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            run = act(
                self,
                request,
                str(schedule),
                partial(operations.run_now_for, request.user, schedule),
            )
            if run is not None:
                self.message_user(
                    request,
                    _("%(schedule)s: started run %(run)s") % {"schedule": schedule, "run": run.pk},
                    messages.SUCCESS,
                )

    @admin.action(description=gettext_lazy("Enable selected schedules"), permissions=["change"])
    def enable_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        """Switch them on; those whose owner was removed become the enabler's (said so)."""
        orphans = [schedule.name for schedule in queryset if schedule.owner_removed]
        count = act(
            self,
            request,
            _("enable"),
            lambda: operations.set_enabled_for(request.user, queryset, enabled=True),
        )
        if count is None:
            return
        said = ngettext(
            "Enabled %(count)d schedule; it fires from now on.",
            "Enabled %(count)d schedules; they fire from now on.",
            count,
        ) % {"count": count}
        if orphans:
            said += " " + _(
                "Taken over, as their owner was removed: you are the owner of %(names)s, "
                "and their runs start as you."
            ) % {"names": ", ".join(orphans)}
        self.message_user(request, said)

    @admin.action(description=gettext_lazy("Disable selected schedules"), permissions=["change"])
    def disable_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        count = act(
            self,
            request,
            _("disable"),
            lambda: operations.set_enabled_for(request.user, queryset, enabled=False),
        )
        if count is not None:
            self.message_user(
                request,
                ngettext("Disabled %(count)d schedule.", "Disabled %(count)d schedules.", count)
                % {"count": count},
            )


def _toggled(schedule: Schedule, enabled: bool) -> str:
    """What *pause* or *resume* did to ``schedule`` (as it was before)."""
    if not enabled:
        return _("Paused: nothing fires until it is resumed.")
    if schedule.owner_removed:
        return _(
            "Resumed and taken over: you are its owner now, and its runs start as you; "
            "armed from now."
        )
    return _("Resumed: armed from now; what it missed while paused is not made up.")


def _button_url_name(button: str) -> str:
    return f"django_weft_schedule_{button.replace('-', '_')}"

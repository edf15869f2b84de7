"""Admin pages: edit schedules and see their next fires; watch and abort runs; edit stored
modules and read their history."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from django_weft import access, operations, projections
from django_weft.clocks import load_clock
from django_weft.cron import CronError, Fire
from django_weft.models import Document, Module, ModuleRevision, Run, Schedule, WorkerProcess
from django_weft.models.run import UNFINISHED
from django_weft.models.schedule import SCHEDULER_FIELDS
from django_weft.sandbox.modules import grant_errors, save_module, source_errors
from django_weft.schedules import validate_job_args

if TYPE_CHECKING:
    ScheduleAdminBase = admin.ModelAdmin[Schedule]
    RunAdminBase = admin.ModelAdmin[Run]
    DocumentAdminBase = admin.ModelAdmin[Document]
    WorkerProcessAdminBase = admin.ModelAdmin[WorkerProcess]
else:
    # ModelAdmin is generic only to the type checker.
    ScheduleAdminBase = RunAdminBase = DocumentAdminBase = WorkerProcessAdminBase = admin.ModelAdmin

#: How many upcoming fires the change page lists.
NEXT_FIRES = 10


if TYPE_CHECKING:
    ScheduleFormBase = forms.ModelForm[Schedule]
else:
    ScheduleFormBase = forms.ModelForm


class ScheduleForm(ScheduleFormBase):
    """Refuses what the deployed code cannot run: an unknown job, args that fail its
    serializer (the model itself checks the plan)."""

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        if "job" in cleaned:
            try:
                cleaned["args"] = validate_job_args(cleaned["job"], cleaned.get("args"))
            except ValidationError as error:
                for field, messages in error.message_dict.items():
                    self.add_error(field if field in self.fields else None, messages)
        return cleaned


def _act(admin_page: admin.ModelAdmin[Any], request: HttpRequest, what: str, work: Any) -> Any:
    """Run ``work()`` (an operation); a refusal becomes an error message, not a 500."""
    try:
        return work()
    except operations.REFUSALS as error:
        _, message, _ = operations.describe_refusal(error)
        admin_page.message_user(request, f"{what}: {message}", messages.ERROR)
        return None


@admin.register(Schedule)
class ScheduleAdmin(ScheduleAdminBase):
    list_display = [
        "name",
        "job",
        "plan",
        "timezone",
        "enabled",
        "next_due",
        "last_status",
        "last_error_message",
        "missed",
    ]
    list_filter = ["enabled", "last_status", "job"]
    search_fields = ["name", "job"]
    actions = ["run_now_action", "enable_action", "disable_action"]
    form = ScheduleForm
    readonly_fields = [
        "owner",
        "next_fires",
        *sorted(SCHEDULER_FIELDS - {"armed", "buffered_due"}),
    ]
    fieldsets = [
        (None, {"fields": ["name", "job", "args", "enabled", "owner"]}),
        ("When", {"fields": ["cron", "timezone", "every", "at", "next_fires"]}),
        (
            "Policies",
            {"fields": ["catch_up", "catch_up_window", "grace", "overlap", "on_gap", "on_fold"]},
        ),
        (
            "Last run",
            {
                "fields": [
                    "next_due",
                    "last_status",
                    "last_due",
                    "last_started",
                    "last_ended",
                    "last_error_type",
                    "last_error_message",
                    "last_run",
                    "missed",
                    "problem",
                ]
            },
        ),
    ]

    @admin.display(description="plan")
    def plan(self, schedule: Schedule) -> str:
        return schedule.describe_plan()

    @admin.display(description="next fires")
    def next_fires(self, schedule: Schedule) -> str:
        """The coming fires in UTC and in the row's zone, DST-moved ones marked."""
        if schedule.pk is None:
            return "Save the schedule to see its next fires."
        now = load_clock().now()
        try:
            fires: list[Fire] = []
            plan = schedule.plan(now)
            after = now
            while len(fires) < NEXT_FIRES and (fire := plan.next_fire(after)) is not None:
                fires.append(fire)
                after = fire.due
        except CronError as error:
            return str(error)
        if not schedule.enabled:
            return "Disabled: nothing fires."
        if not fires:
            return "Nothing more to fire."
        zone = ZoneInfo(schedule.timezone_name())
        return format_html(
            "<ol class='weft-next-fires'>{}</ol>",
            format_html_join(
                "",
                "<li>{} UTC &middot; {} {}</li>",
                (
                    (
                        f"{fire.due:%Y-%m-%d %H:%M}",
                        f"{fire.due.astimezone(zone):%Y-%m-%d %H:%M %Z}",
                        f"({fire.note})" if fire.note else "",
                    )
                    for fire in fires
                ),
            ),
        )

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        """Through the service layer: who may write, and who the schedule runs as."""
        if change:
            changed = {name: form.cleaned_data[name] for name in form.changed_data}
            stored = Schedule.objects.get(pk=obj.pk)
            _act(
                self,
                request,
                str(obj),
                lambda: operations.edit_schedule_for(request.user, stored, changed),
            )
            return
        fields = {name: form.cleaned_data[name] for name in form.cleaned_data}
        created = _act(
            self, request, str(obj), lambda: operations.create_schedule_for(request.user, fields)
        )
        if created is not None:
            obj.pk = created.pk

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        _act(self, request, str(obj), lambda: operations.delete_schedule_for(request.user, obj))

    def has_change_permission(self, request: HttpRequest, obj: Schedule | None = None) -> bool:
        # A schedule's owner changes it without the model permission, as the API allows.
        return (
            obj is not None and access.owns(request.user, obj)
        ) or super().has_change_permission(request, obj)

    def has_run_permission(self, request: HttpRequest) -> bool:
        """*Run now* starts runs: the action shows to those who may start runs."""
        return access.may_start_runs(request.user)

    @admin.action(description="Run selected schedules now", permissions=["run"])
    def run_now_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            run = _act(
                self,
                request,
                str(schedule),
                lambda s=schedule: operations.run_now_for(request.user, s),
            )
            if run is not None:
                self.message_user(request, f"{schedule}: started run {run.pk}", messages.SUCCESS)

    @admin.action(description="Enable selected schedules", permissions=["change"])
    def enable_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        count = _act(
            self,
            request,
            "enable",
            lambda: operations.set_enabled_for(request.user, queryset, enabled=True),
        )
        if count is not None:
            self.message_user(request, f"Enabled {count} schedule(s); they fire from now on.")

    @admin.action(description="Disable selected schedules", permissions=["change"])
    def disable_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        count = _act(
            self,
            request,
            "disable",
            lambda: operations.set_enabled_for(request.user, queryset, enabled=False),
        )
        if count is not None:
            self.message_user(request, f"Disabled {count} schedule(s).")


@admin.register(Run)
class RunAdmin(RunAdminBase):
    list_display = ["id", "job", "phase", "owner", "schedule", "due", "created_at", "finished_at"]
    list_filter = ["status", "job", "owner"]
    search_fields = ["id", "job", "idempotency_key"]
    actions = ["abort_action"]
    date_hierarchy = "created_at"

    def get_readonly_fields(self, request: HttpRequest, obj: Run | None = None) -> list[str]:
        return [field.name for field in Run._meta.fields] + ["phase", "state_data"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        return False

    @admin.display(description="phase")
    def phase(self, run: Run) -> str:
        return projections.phase(run)

    @admin.display(description="state")
    def state_data(self, run: Run) -> str:
        if run.state is None:
            return "-"
        return format_html(
            "<pre class='weft-state' data-key='{}'>{}</pre>",
            run.state.key,
            json.dumps(run.state.data, indent=2, ensure_ascii=False),
        )

    def has_abort_permission(self, request: HttpRequest) -> bool:
        """Anyone signed in may abort their own runs; change_run, anyone's."""
        return bool(request.user.is_authenticated)

    @admin.action(description="Abort selected runs", permissions=["abort"])
    def abort_action(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        requested = 0
        for run in queryset.filter(status__in=UNFINISHED):
            if _act(
                self, request, f"run {run.pk}", lambda r=run: operations.abort_for(request.user, r)
            ):
                requested += 1
        self.message_user(request, f"Abort requested for {requested} run(s).")


@admin.register(Document)
class DocumentAdmin(DocumentAdminBase):
    """Documents are read here, never written: a change goes through the document API,
    one revision at a time, so that no newer revision is overwritten and every watcher
    hears it."""

    list_display = ["key", "schema", "version", "revision", "updated_at"]
    search_fields = ["key", "schema"]

    def get_readonly_fields(self, request: HttpRequest, obj: Document | None = None) -> list[str]:
        return [field.name for field in Document._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Document | None = None) -> bool:
        return False


@admin.register(WorkerProcess)
class WorkerProcessAdmin(WorkerProcessAdminBase):
    list_display = ["__str__", "started_at", "last_beat", "stopped_at"]
    readonly_fields = ["hostname", "pid", "started_at", "last_beat", "stopped_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


# -- stored modules -----------------------------------------------------------------------------

if TYPE_CHECKING:
    ModuleAdminBase = admin.ModelAdmin[Module]
    ModuleRevisionInlineBase = admin.TabularInline[ModuleRevision, Module]
    ModuleFormBase = forms.ModelForm[Module]
else:
    # ModelAdmin, TabularInline and ModelForm are generic only to the type checker.
    ModuleAdminBase = admin.ModelAdmin
    ModuleRevisionInlineBase = admin.TabularInline
    ModuleFormBase = forms.ModelForm


class ModuleForm(ModuleFormBase):
    """Refuses a source RestrictedPython does not compile (naming the line) and unknown grants."""

    class Meta:
        model = Module
        fields = ["name", "source", "grants"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "source" in cleaned:
            for message in source_errors(cleaned["source"], cleaned.get("name", "")):
                self.add_error("source", message)
        if "grants" in cleaned:
            for message in grant_errors(cleaned["grants"]):
                self.add_error("grants", message)
        return cleaned


class ModuleRevisionInline(ModuleRevisionInlineBase):
    """The module's history, newest first; revisions are never edited or deleted."""

    model = ModuleRevision
    fields = ["revision", "created_at", "author", "grants", "source_text"]
    readonly_fields = ["revision", "created_at", "author", "grants", "source_text"]
    extra = 0
    can_delete = False
    ordering = ["-revision"]

    def has_add_permission(self, request: HttpRequest, obj: Module | None = None) -> bool:
        return False

    @admin.display(description="source")
    def source_text(self, revision: ModuleRevision) -> str:
        return format_html("<pre class='weft-module-source'>{}</pre>", revision.source)


@admin.register(Module)
class ModuleAdmin(ModuleAdminBase):
    form = ModuleForm
    list_display = ["name", "revision", "grants", "updated_at"]
    search_fields = ["name"]
    readonly_fields = ["revision", "updated_at"]
    inlines = [ModuleRevisionInline]

    def get_inlines(self, request: HttpRequest, obj: Module | None) -> list[type[Any]]:
        """The history, once there is one: a module being added has none."""
        return [] if obj is None else [ModuleRevisionInline]

    def save_model(self, request: HttpRequest, obj: Module, form: Any, change: bool) -> None:
        """Save through the sandbox's save path: the next revision, kept in the history."""
        save_module(obj, author=request.user if request.user.is_authenticated else None)

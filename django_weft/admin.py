"""Admin pages: edit schedules and see their next fires; watch and abort runs; edit stored
modules and read their history."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from django_weft import access, operations
from django_weft.console import formatting, pages
from django_weft.console.plan_preview import fires_preview, invalid_preview
from django_weft.console.plan_words import moment_words, plan_words, state_words
from django_weft.console.schedule_form import ArgsField, DatalistInput, job_options, zone_options
from django_weft.engine.schedules import validate_job_args
from django_weft.live import projections
from django_weft.models import (
    Document,
    Module,
    ModuleRevision,
    Overview,
    Run,
    RunStatus,
    Schedule,
    WorkerProcess,
)
from django_weft.models.run import UNFINISHED
from django_weft.models.schedule import PLAN_FIELDS, SCHEDULER_FIELDS
from django_weft.sandbox.modules import grant_errors, save_module, source_errors
from django_weft.timing.clocks import load_clock

if TYPE_CHECKING:
    ScheduleAdminBase = admin.ModelAdmin[Schedule]
    RunAdminBase = admin.ModelAdmin[Run]
    DocumentAdminBase = admin.ModelAdmin[Document]
    WorkerProcessAdminBase = admin.ModelAdmin[WorkerProcess]
    OverviewAdminBase = admin.ModelAdmin[Overview]
else:
    # ModelAdmin is generic only to the type checker.
    ScheduleAdminBase = RunAdminBase = DocumentAdminBase = WorkerProcessAdminBase = admin.ModelAdmin
    OverviewAdminBase = admin.ModelAdmin

if TYPE_CHECKING:
    ScheduleFormBase = forms.ModelForm[Schedule]
else:
    ScheduleFormBase = forms.ModelForm


class ScheduleForm(ScheduleFormBase):
    """Refuses what the deployed code cannot run: an unknown job, args that fail its
    serializer (the model itself checks the plan). The job and the zone are searched as
    they are typed; the args are a form of the job's own (see
    :mod:`django_weft.console.schedule_form`)."""

    args = ArgsField(help_text="The job's args.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "job" in self.fields:
            self.fields["job"].widget = DatalistInput(job_options(), {"class": "vTextField"})
        if "timezone" in self.fields:
            self.fields["timezone"].widget = DatalistInput(zone_options(), {"class": "vTextField"})
        if "args" in self.fields:
            job = self.data.get(self.add_prefix("job")) if self.is_bound else None
            if job is None:
                job = self.initial.get("job") or self.instance.job
            cast(ArgsField, self.fields["args"]).use_job(str(job or ""))

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        if "job" in cleaned and "args" in cleaned:
            try:
                cleaned["args"] = validate_job_args(cleaned["job"], cleaned["args"])
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


#: The schedule page's buttons, each one POST through the service layer.
SCHEDULE_BUTTONS = {"run-now": "Run now", "pause": "Pause", "resume": "Resume"}
#: How many runs the schedule page lists.
RECENT_RUNS = 10


@admin.register(Schedule)
class ScheduleAdmin(ScheduleAdminBase):
    list_display = [
        "name",
        "job_name",
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
    fieldsets = [
        (None, {"fields": ["name", "job", "args", "enabled", "owner"]}),
        ("When", {"fields": ["plan", "cron", "timezone", "every", "at", "next_fires"]}),
        (
            "Policies",
            {"fields": ["catch_up", "catch_up_window", "grace", "overlap", "on_gap", "on_fold"]},
        ),
        (
            "Last run",
            {
                "fields": [
                    "state",
                    "next_due_at",
                    "last_status",
                    "last_due_at",
                    "last_started_at",
                    "last_ended_at",
                    "last_error_type",
                    "last_error_message",
                    "last_run",
                    "missed",
                    "problem",
                    "recent_runs",
                ]
            },
        ),
    ]

    class Media:
        css = {"all": ["django_weft/schedule.css"]}

    @admin.display(description="plan")
    def plan(self, schedule: Schedule) -> str:
        return plan_words(schedule)

    @admin.display(description="state")
    def state(self, schedule: Schedule) -> str:
        return state_words(schedule)

    @admin.display(description="job", ordering="job")
    def job_name(self, schedule: Schedule) -> str:
        """The job's name, free to wrap after each dot in a narrow column."""
        return format_html_join(
            mark_safe(".<wbr>"), "{}", ((part,) for part in schedule.job.split("."))
        )

    @admin.display(description="next due", ordering="next_due")
    def next_due_at(self, schedule: Schedule) -> str:
        """When an armed row fires next; for any other, where it stands ("fired, done")."""
        state = state_words(schedule)
        if state != "armed" or schedule.next_due is None:
            return state
        day, time = moment_words(schedule.next_due).split(" ", 1)
        return format_html(
            "<span class='nowrap'>{}</span> <span class='nowrap'>{}</span>", day, time
        )

    @admin.display(description="last due")
    def last_due_at(self, schedule: Schedule) -> str:
        return self._moment(schedule, schedule.last_due)

    @admin.display(description="last started")
    def last_started_at(self, schedule: Schedule) -> str:
        return self._moment(schedule, schedule.last_started)

    @admin.display(description="last ended")
    def last_ended_at(self, schedule: Schedule) -> str:
        return self._moment(schedule, schedule.last_ended)

    @staticmethod
    def _moment(schedule: Schedule, moment: datetime | None) -> str:
        """To the second, in UTC and on the schedule's wall clock."""
        return moment_words(moment, schedule.timezone) if moment else "-"

    @admin.display(description="last error", ordering="last_error_message")
    def last_error(self, schedule: Schedule) -> str:
        """The last error cut to one line; the whole of it on hover and on the page."""
        if not schedule.last_error_message:
            return "-"
        return format_html(
            "<span class='weft-sch-error' title='{}'>{}</span>",
            schedule.last_error_message,
            schedule.last_error_message,
        )

    @admin.display(description="next fires")
    def next_fires(self, schedule: Schedule) -> str:
        """The coming fires in UTC and in the row's zone, with DST notes in words."""
        return format_html(
            "<div class='weft-sch-fires' aria-live='polite'>{}</div>",
            fires_preview(schedule, load_clock().now()).html(),
        )

    @admin.display(description="recent runs")
    def recent_runs(self, schedule: Schedule) -> str:
        """The schedule's last runs, each linked to its page, and a link to all of them."""
        if schedule.pk is None:
            return "-"
        site = self.admin_site.name
        return render_to_string(
            "admin/django_weft/schedule/recent_runs.html",
            {
                "runs": [
                    (
                        run,
                        formatting.short_id(run.pk),
                        reverse(f"{site}:django_weft_run_change", args=[run.pk]),
                        projections.phase(run),
                        moment_words(run.due) if run.due else "run now",
                        moment_words(run.finished_at) if run.finished_at else "-",
                    )
                    for run in schedule.runs.order_by("-created_at")[:RECENT_RUNS]
                ],
                "all_url": f"{reverse(f'{site}:django_weft_run_changelist')}"
                f"?schedule__id__exact={schedule.pk}",
            },
        )

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
        if not any(name in form.fields for name in PLAN_FIELDS):  # a read-only page
            return JsonResponse(fires_preview(schedule, load_clock().now()).as_json())
        if not form.is_valid():
            errors = {name: [str(m) for m in messages] for name, messages in form.errors.items()}
            return JsonResponse(invalid_preview(schedule).as_json(errors))
        if any(name in form.changed_data for name in PLAN_FIELDS):
            schedule.armed = False  # once saved, the row is armed afresh from now
        return JsonResponse(fires_preview(schedule, load_clock().now()).as_json())

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
            run = _act(self, request, str(schedule), lambda: operations.run_now_for(user, schedule))
            if run is not None:
                self.message_user(
                    request,
                    format_html(
                        "Started run <a href='{}'>{}</a>.",
                        reverse(f"{self.admin_site.name}:django_weft_run_change", args=[run.pk]),
                        run.pk,
                    ),
                    messages.SUCCESS,
                )
        else:
            enabled = button == "resume"
            count = _act(
                self,
                request,
                str(schedule),
                lambda: operations.set_enabled_for(user, [schedule], enabled=enabled),
            )
            if count is not None:
                self.message_user(
                    request,
                    "Resumed: armed from now; what it missed while paused is not made up."
                    if enabled
                    else "Paused: nothing fires until it is resumed.",
                    messages.SUCCESS,
                )
        return HttpResponseRedirect(
            reverse(
                f"{self.admin_site.name}:django_weft_schedule_change", args=[quote(schedule.pk)]
            )
        )

    def _page_object(self, request: HttpRequest, object_id: str | None) -> Schedule | None:
        if object_id is None:
            return None
        schedule = self.get_object(request, unquote(object_id))
        if schedule is None:
            raise Http404(f"no schedule {object_id}")
        return schedule

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


def _button_url_name(button: str) -> str:
    return f"django_weft_schedule_{button.replace('-', '_')}"


@admin.register(Run)
class RunAdmin(RunAdminBase):
    """The run list updates live and fits a laptop's screen; a run's page is the console's
    run page (its output as a terminal, its attempts, *abort* and *retry*), not a form."""

    list_display = ["short_id", "job", "phase", "queue", "started_by", "created", "length"]
    list_display_links = ["short_id"]
    list_filter = ["status", "job", "queue", "owner"]
    list_select_related = ["owner", "schedule"]
    search_fields = ["id", "job", "idempotency_key", "args"]
    actions = ["abort_action"]
    date_hierarchy = "created_at"

    class Media:
        css = {"all": ["django_weft/console.css"]}
        js = ["django_weft/console.js"]

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/abort/", wrap(self.abort_view), name="django_weft_run_abort"),
            path("<path:object_id>/retry/", wrap(self.retry_view), name="django_weft_run_retry"),
            *super().get_urls(),
        ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        return super().get_queryset(request).select_related("owner", "schedule", "state", "worker")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        return False

    @admin.display(description="id", ordering="id")
    def short_id(self, run: Run) -> str:
        return format_html("<code title='{}'>{}</code>", run.pk, formatting.short_id(run.pk))

    @admin.display(description="phase")
    def phase(self, run: Run) -> str:
        phase = projections.phase(run)
        return format_html("<span class='weft-phase weft-phase-{}'>{}</span>", phase, phase)

    @admin.display(description="started by")
    def started_by(self, run: Run) -> str:
        """The schedule that fired the run, or the user who started it: one narrow column."""
        if run.schedule is not None:
            return format_html("<span class='weft-quiet'>schedule</span> {}", run.schedule.name)
        return run.owner.get_username() if run.owner is not None else "-"

    @admin.display(description="created", ordering="created_at")
    def created(self, run: Run) -> str:
        """The date over the time and zone: the list keeps room for every column at 1280 px."""
        day, clock = formatting.moment(run.created_at, timezone.get_current_timezone()).split(
            " ", 1
        )
        return format_html("{}<br>{}", day, clock)

    @admin.display(description="duration")
    def length(self, run: Run) -> str:
        length = formatting.run_length(run.started_at, run.finished_at, load_clock().now())
        return formatting.duration(length)

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
            **pages.run_context(
                request.user, run, load_clock().now(), timezone.get_current_timezone()
            ),
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
            raise Http404(f"there is no run {object_id}")
        return run

    def abort_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """*Abort* on the run page: a POST, decided by the service layer."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self._run(request, object_id)
        requested = _act(
            self, request, f"run {run.pk}", lambda: operations.abort_for(request.user, run)
        )
        if requested is not None:
            self.message_user(
                request,
                f"Abort requested for run {run.pk}: it stops at its next sleep() or check()."
                if requested
                else f"Abort of run {run.pk} was requested already.",
                messages.SUCCESS,
            )
        return redirect("admin:django_weft_run_change", run.pk)

    def retry_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """*Retry* on the run page: a new run with the same args, owned by whoever retries."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self._run(request, object_id)
        retried = _act(
            self, request, f"retry run {run.pk}", lambda: operations.retry_for(request.user, run)
        )
        if retried is None:
            return redirect("admin:django_weft_run_change", run.pk)
        self.message_user(request, f"Run {run.pk} retried as run {retried.pk}.", messages.SUCCESS)
        return redirect("admin:django_weft_run_change", retried.pk)

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


@admin.register(Overview)
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
        return {
            **self.admin_site.each_context(request),
            **pages.overview_context(
                request.user, load_clock().now(), timezone.get_current_timezone()
            ),
            "opts": self.opts,
            "title": "Overview",
            "subtitle": None,
            "media": self.media,
        }

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        context = self._context(request) | (extra_context or {})
        return TemplateResponse(request, "admin/django_weft/overview/page.html", context)

    def live_view(self, request: HttpRequest) -> HttpResponse:
        """The overview's figures alone, as the page redraws them."""
        return TemplateResponse(
            request, "admin/django_weft/overview/figures.html", self._context(request)
        )

    def pause_view(self, request: HttpRequest) -> HttpResponse:
        return self._queue_action(request, pause=True)

    def resume_view(self, request: HttpRequest) -> HttpResponse:
        return self._queue_action(request, pause=False)

    def _queue_action(self, request: HttpRequest, *, pause: bool) -> HttpResponse:
        """Pause or resume the queue a POST names, through the service layer."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        queue = request.POST.get("queue", "").strip()
        verb = "pause" if pause else "resume"
        if not queue:
            self.message_user(request, f"Name the queue to {verb}.", messages.ERROR)
            return redirect("admin:django_weft_overview_changelist")
        action = operations.pause_queue_for if pause else operations.resume_queue_for
        changed = _act(self, request, f"{verb} queue {queue}", lambda: action(request.user, queue))
        if changed is not None:
            done = (
                f"Paused queue {queue}: no worker claims its runs until it is resumed."
                if pause
                else f"Resumed queue {queue}: workers claim its runs again."
            )
            same = f"Queue {queue} was {'paused' if pause else 'not paused'} already."
            self.message_user(request, done if changed else same, messages.SUCCESS)
        return redirect("admin:django_weft_overview_changelist")


@admin.register(Document)
class DocumentAdmin(DocumentAdminBase):
    """Documents are read here, never written: a change goes through the document API,
    one revision at a time, so that no newer revision is overwritten and every watcher
    hears it."""

    list_display = ["key", "schema", "version", "revision", "updated_at"]
    search_fields = ["key", "schema"]
    fields = readonly_fields = ("key", "schema", "version", "revision", "updated_at", "data_json")

    class Media:
        css = {"all": ["django_weft/console.css"]}

    @admin.display(description="data")
    def data_json(self, document: Document) -> str:
        """Indented and wrapped, as the run pages show JSON."""
        return format_html("<pre class='weft-json'>{}</pre>", formatting.pretty_json(document.data))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Document | None = None) -> bool:
        return False


@admin.register(WorkerProcess)
class WorkerProcessAdmin(WorkerProcessAdminBase):
    """Worker rows are written by the workers themselves: read here, never edited."""

    list_display = ["__str__", "started_at", "last_beat", "stopped_at", "running"]
    readonly_fields = ["hostname", "pid", "started_at", "last_beat", "stopped_at"]
    ordering = ["-last_beat"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkerProcess]:
        held = Count("runs", filter=Q(runs__status=RunStatus.RUNNING))
        return super().get_queryset(request).annotate(running_runs=held)

    @admin.display(description="running", ordering="running_runs")
    def running(self, worker: WorkerProcess) -> int:
        return int(getattr(worker, "running_runs", 0))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: WorkerProcess | None = None) -> bool:
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

"""How a schedule reads in the console: the list's columns and the page's read-only fields.

A mixin of :class:`django_weft.console.schedules.ScheduleAdmin`: the admin finds list
columns and read-only fields by name on the ``ModelAdmin``, so they are its methods,
kept here apart from the pages and actions.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib import admin
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from django_weft import access
from django_weft.console import formatting
from django_weft.console.plan_preview import fires_preview
from django_weft.console.plan_words import moment_words, plan_words, state_words
from django_weft.live import projections
from django_weft.models import Schedule
from django_weft.timing import clocks

#: How many runs the schedule page lists.
RECENT_RUNS = 10


class ScheduleColumns:
    """The schedule's plan and state in words, its moments, its next fires, its last runs."""

    admin_site: admin.AdminSite

    @admin.display(description=gettext_lazy("plan"))
    def plan(self, schedule: Schedule) -> str:
        return formatting.unbroken_dates(plan_words(schedule))

    @admin.display(description=gettext_lazy("state"))
    def state(self, schedule: Schedule) -> str:
        return state_words(schedule)

    @admin.display(description=gettext_lazy("next due"), ordering="next_due")
    def next_due_at(self, schedule: Schedule) -> str:
        """When an armed row fires next; for any other, where it stands ("fired, done").

        A row switched on that fires nothing says "parked" and why (on one line, all of
        it on hover): at its next due it is only looked at again.
        """
        reason = parked_reason(schedule)
        if reason and schedule.enabled:
            return format_html(
                "<span class='weft-sch-error' title='{}'>parked: {}</span>", reason, reason
            )
        state = state_words(schedule)
        if state != "armed" or schedule.next_due is None:
            return state
        day, time = moment_words(schedule.next_due).split(" ", 1)
        return format_html(
            "<span class='nowrap'>{}</span> <span class='nowrap'>{}</span> "
            "<span class='nowrap weft-quiet'>{}</span>",
            day,
            time,
            formatting.relative_html(schedule.next_due, clocks.now()),
        )

    @admin.display(description=gettext_lazy("last due"))
    def last_due_at(self, schedule: Schedule) -> str:
        return _moment(schedule, schedule.last_due)

    @admin.display(description=gettext_lazy("last started"))
    def last_started_at(self, schedule: Schedule) -> str:
        return _moment(schedule, schedule.last_started)

    @admin.display(description=gettext_lazy("last ended"))
    def last_ended_at(self, schedule: Schedule) -> str:
        return _moment(schedule, schedule.last_ended)

    @admin.display(description=gettext_lazy("last error"), ordering="last_error_message")
    def last_error(self, schedule: Schedule) -> str:
        """The last error cut to one line; the whole of it on hover and on the page."""
        if not schedule.last_error_message:
            return "-"
        return format_html(
            "<span class='weft-sch-error' title='{}'>{}</span>",
            schedule.last_error_message,
            schedule.last_error_message,
        )

    @admin.display(description=gettext_lazy("parked"))
    def parked_because(self, schedule: Schedule) -> str:
        """The page's word on a parked row: why, and what makes it fire again."""
        reason = parked_reason(schedule)
        if not reason:
            return "-"
        if schedule.owner_removed and schedule.owner_id is None:
            remedy = _(
                "Nothing fires until someone takes it over: whoever resumes (or enables) it, "
                "or changes its job or args, becomes its owner, and its runs start as them; "
                "that needs %(permission)s, and the use of any stored module it calls."
            ) % {"permission": access.ADD_RUN}
        elif schedule.owner_id is not None and access.schedule_owner_refusal(schedule):
            remedy = _(
                "Each slot is skipped and counted missed; it fires again at its next slot "
                "once its owner is active and holds %(permission)s, or once someone who "
                "may start runs changes its job or args (and so becomes its owner)."
            ) % {"permission": access.ADD_RUN}
        else:
            remedy = _(
                "Each slot is skipped and counted missed; it fires again at its next slot "
                "once this is fixed."
            )
        return format_html("<strong>{}</strong>. {}", reason, remedy)

    @admin.display(description=gettext_lazy("next fires"))
    def next_fires(self, schedule: Schedule) -> str:
        """The coming fires in UTC and in the row's zone, with DST notes in words.

        One field of one page: the process's clock is read once for the request.
        """
        return format_html(
            "<div class='weft-sch-fires' aria-live='polite'>{}</div>",
            fires_preview(schedule, clocks.now()).html(),
        )

    @admin.display(description=gettext_lazy("recent runs"))
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


def parked_reason(schedule: Schedule) -> str:
    """Why the scheduler fires nothing of ``schedule``, or "" when it fires.

    Its ``problem`` as the last fire left it, or, for a row whose owner's user was deleted
    and that has not come due since, that reason already.
    """
    if not schedule.problem and schedule.owner_removed and schedule.owner_id is None:
        return access.OWNER_REMOVED
    return schedule.problem


def _moment(schedule: Schedule, moment: datetime | None) -> str:
    """To the second, in UTC and on the schedule's wall clock, and how long ago."""
    if moment is None:
        return "-"
    return format_html(
        "{} <span class='weft-quiet'>{}</span>",
        moment_words(moment, schedule.timezone),
        formatting.relative_html(moment, clocks.now()),
    )

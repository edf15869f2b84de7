"""The order of a schedule page's fields: the plan and its preview at the top.

An operator opens a schedule to see or change when it fires, so right after its name and
job come the plan in words, the next due and the next fires with their clock-change
notes (on a 390 px phone, within the first screen), then the fields of the plan's kind
(a cron with its zone and its clock-change policies, an interval, or a moment). On an
existing schedule the fields of the other two kinds are folded away under one heading (a
field with an error is never folded: Django opens it); the add page shows all three,
since no kind is chosen yet. Whether it is enabled, its state and its owner follow, then
its args and policies. The last run's fields are folded while the schedule has never
fired: ten dashes say nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils.translation import gettext_lazy

from django_weft.models import Schedule

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldOpts
    from django.utils.functional import _StrOrPromise

#: The editable fields of each kind of plan, in the page's order.
KIND_FIELDS = {
    "cron": ("cron", "timezone", "on_gap", "on_fold"),
    "every": ("every",),
    "at": ("at",),
}

LAST_RUN_FIELDS = (
    "last_status",
    "last_due_at",
    "last_started_at",
    "last_ended_at",
    "last_error_type",
    "last_error_message",
    "last_run",
    "missed",
    "recent_runs",
)

Fieldsets = list[tuple["_StrOrPromise | None", "_FieldOpts"]]


def kind_of(schedule: Schedule) -> str:
    """Which kind of plan ``schedule`` has: ``cron``, ``every`` or ``at``."""
    if schedule.every is not None:
        return "every"
    if schedule.at is not None:
        return "at"
    return "cron"


def fieldsets(schedule: Schedule | None) -> Fieldsets:
    """The schedule page's fieldsets for ``schedule`` (None: the add page)."""
    if schedule is None:
        plan = ("plan", "next_due_at", "next_fires", *KIND_FIELDS["cron"], "every", "at")
        others: tuple[str, ...] = ()
    else:
        kind = kind_of(schedule)
        plan = ("plan", "next_due_at", "next_fires", *KIND_FIELDS[kind])
        others = tuple(
            name for other, names in KIND_FIELDS.items() if other != kind for name in names
        )
    layout: Fieldsets = [
        (None, {"fields": ("name", "job")}),
        (gettext_lazy("When"), {"fields": plan}),
    ]
    if others:
        layout.append(
            (
                gettext_lazy("Another kind of plan"),
                {
                    "fields": others,
                    "classes": ["collapse"],
                    "description": gettext_lazy(
                        "A schedule has one plan: to switch, empty the fields above and fill these."
                    ),
                },
            )
        )
    never_ran = schedule is None or (schedule.last_due is None and schedule.last_run_id is None)
    layout += [
        (
            gettext_lazy("Enabled, state and owner"),
            {"fields": ("enabled", "state", "owner", "parked_because")},
        ),
        (gettext_lazy("Args"), {"fields": ("args",)}),
        (
            gettext_lazy("Policies"),
            {"fields": ("catch_up", "catch_up_window", "grace", "overlap")},
        ),
        (
            gettext_lazy("Last run"),
            {"fields": LAST_RUN_FIELDS, "classes": ["collapse"] if never_ran else []},
        ),
    ]
    return layout

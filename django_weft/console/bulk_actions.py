"""The run list's bulk actions: retry, abort or delete the selected runs, or all matching.

They are Django admin actions, so the selection is the admin's own: the ticked rows, or,
once "Select all N runs" is clicked, every run the list's filters, search and date drill
match (the admin's ``select_across``), read by the admin's own ``ChangeList``. What is
done to each run is :func:`django_weft.operations.bulk_for`'s, for the signed-in user.

Retrying or aborting the ticked rows happens at once, as the abort action always has;
deleting, and any action on all matching runs, first shows a confirmation page that
names the count, the filter in words and the newest runs it would touch (as Django's own
delete confirmation lists its objects), and posts the same selection back. Aborting and
deleting are styled as Django styles a deletion: they cannot be undone. Either way
the runs the user may not act on are counted, not judged one by one, and a filter that
matches more than ``MAX_FILTER_RUNS`` runs is refused naming it (the service layer's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy, ngettext

from django_weft import operations
from django_weft.console import formatting
from django_weft.console.refusals import act
from django_weft.live import projections
from django_weft.models import Run
from django_weft.operations.bulk import MAX_FILTER_RUNS

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin
    from django.contrib.admin.views.main import ChangeList

#: Each action's name in the list's menu.
LABELS = {
    "retry": gettext_lazy("Retry selected runs"),
    "abort": gettext_lazy("Abort selected runs"),
    "delete": gettext_lazy("Delete selected runs"),
}

#: How many of the runs it would touch a confirmation lists, newest first.
SHOWN_RUNS = 10

#: The actions that cannot be undone: their button is styled as a deletion's.
DESTRUCTIVE = {"abort", "delete"}

#: The parameters of the list's address that are not filters.
NOT_FILTERS = {"o", "p", "q", "_changelist_filters", "_to_field", "_popup"}


def run_bulk_action(
    page: ModelAdmin[Run], request: HttpRequest, queryset: QuerySet[Run], action: str
) -> TemplateResponse | None:
    """Do ``action`` to the runs of ``queryset`` (the admin's selection), or first ask."""
    across = request.POST.get("select_across") == "1"
    if (across or action == "delete") and request.POST.get("post") != "yes":
        return confirmation(page, request, queryset, action, across)
    result = act(
        page,
        request,
        str(LABELS[action]),
        lambda: operations.bulk_for(request.user, action, matching=queryset),
    )
    if result is not None:
        level = messages.SUCCESS if not result.refused else messages.WARNING
        page.message_user(request, result.summary(), level)
    return None


def confirmation(
    page: ModelAdmin[Run],
    request: HttpRequest,
    queryset: QuerySet[Run],
    action: str,
    across: bool,
) -> TemplateResponse:
    """The page that names what ``action`` would touch, and posts the selection back."""
    count = queryset.count()
    changelist = page.get_changelist_instance(request)
    words = filter_words(changelist, request) if across else []
    if across:
        question = ngettext(
            "%(action)s all %(count)d run matching this filter?",
            "%(action)s all %(count)d runs matching this filter?",
            count,
        )
    else:
        question = ngettext(
            "%(action)s the %(count)d selected run?",
            "%(action)s the %(count)d selected runs?",
            count,
        )
    verb = {"retry": gettext("Retry"), "abort": gettext("Abort"), "delete": gettext("Delete")}
    shown = [
        {
            "run": run,
            "short_id": formatting.short_id(run.pk),
            "phase": projections.phase(run),
            "created": formatting.moment(run.created_at, timezone.get_current_timezone()),
            "url": reverse(f"{page.admin_site.name}:django_weft_run_change", args=[run.pk]),
        }
        for run in queryset.order_by("-created_at")[:SHOWN_RUNS]
    ]
    context: dict[str, Any] = {
        **page.admin_site.each_context(request),
        "opts": page.opts,
        "title": gettext("Are you sure?"),
        "question": question % {"action": verb[action], "count": count},
        "filter_words": words,
        "shown": shown,
        "not_shown": count - len(shown),
        "destructive": action in DESTRUCTIVE,
        "across": across,
        "action_name": f"{action}_action",
        "selected": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "most": MAX_FILTER_RUNS,
        "media": page.media,
    }
    return TemplateResponse(request, "admin/django_weft/run/bulk_confirmation.html", context)


def filter_words(changelist: ChangeList, request: HttpRequest) -> list[str]:
    """The list's filter as a person reads it: each chosen filter by its title and
    choice (the created-date filter too), the search, then any other lookup of the
    address."""
    words = []
    used: set[str] = set()
    for spec in changelist.filter_specs:
        chosen = getattr(spec, "used_parameters", {})
        if not chosen:
            continue
        used.update(chosen)
        shown = [
            str(choice["display"]) for choice in spec.choices(changelist) if choice["selected"]
        ]
        words.append(
            gettext("%(title)s is %(choice)s") % {"title": spec.title, "choice": ", ".join(shown)}
        )
    if changelist.query:
        words.append(gettext("search is “%(query)s”") % {"query": changelist.query})
    for name, value in request.GET.items():
        if name not in used and name not in NOT_FILTERS:
            words.append(f"{name} = {value}")
    return words

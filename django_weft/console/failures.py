"""Failures grouped by what went wrong: the error's class and message.

Ten runs failing on the same ``ConnectionError`` are one problem, not ten. The overview
lists the groups of the last day (how many runs, which job or how many jobs, first and
last seen), each linked to the run list's *error* filter, which offers the same groups
and keeps the failed runs of one. Both read the failed runs of the day through the
index over failures (``weft_run_failures``), never the run table whole.

A filter's value is the class and the message as the page shows them, ``"ValueError:
bad row 7"`` (the class alone when the message is empty): a class name never holds
``": "``, so the first one splits the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib import admin
from django.contrib.admin.exceptions import DisallowedModelAdminLookup
from django.db.models import Count, Max, Min, Q, QuerySet
from django.http import HttpRequest
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy

from django_weft.console import visibility
from django_weft.console.history import FAILURES
from django_weft.models import Run
from django_weft.timing import clocks

#: How far back the groups go.
WINDOW = timedelta(hours=24)
#: How many groups the overview lists and the filter offers, the latest seen first.
GROUPS_SHOWN = 10
SEPARATOR = ": "


@dataclass(frozen=True)
class FailureGroup:
    """The runs that failed with one error class and message within :data:`WINDOW`."""

    error_type: str
    error_message: str
    runs: int
    #: The job's name when every run was of one job, else "".
    job: str
    jobs: int
    first_seen: datetime
    last_seen: datetime

    @property
    def choice(self) -> str:
        """The run list's *error* filter value that keeps these runs."""
        return choice(self.error_type, self.error_message)


def choice(error_type: str, error_message: str) -> str:
    return f"{error_type}{SEPARATOR}{error_message}" if error_message else error_type


def failure_groups(now: datetime, shown: int = GROUPS_SHOWN) -> list[FailureGroup]:
    """The ``shown`` groups of the runs that failed within :data:`WINDOW` of ``now``,
    the latest seen first (one query)."""
    rows = (
        Run.objects.filter(status__in=FAILURES, finished_at__gt=now - WINDOW)
        .order_by()
        .values("error_type", "error_message")
        .annotate(
            runs=Count("pk"),
            jobs=Count("job", distinct=True),
            any_job=Min("job"),
            first_seen=Min("finished_at"),
            last_seen=Max("finished_at"),
        )
        .order_by("-last_seen", "error_type", "error_message")[:shown]
    )
    return [
        FailureGroup(
            error_type=row["error_type"],
            error_message=row["error_message"],
            runs=row["runs"],
            job=row["any_job"] if row["jobs"] == 1 else "",
            jobs=row["jobs"],
            first_seen=row["first_seen"],
            last_seen=row["last_seen"],
        )
        for row in rows
    ]


def failed_with(value: str) -> Q:
    """The failed runs whose error is the filter value ``value`` (see :func:`choice`)."""
    error_type, _, error_message = value.partition(SEPARATOR)
    return Q(status__in=FAILURES, error_type=error_type, error_message=error_message)


class ErrorFilter(admin.SimpleListFilter):
    """The run list's *error* filter: the failure groups of the last day to choose from,
    and ``?error=...`` keeps the failed runs of one, of any age.

    It reads the errors, which guests never see: for anyone who does not see every run
    in full it offers nothing (so it is not shown) and refuses a value with a 400, as
    the list refuses a filter on any other field the guest view leaves out."""

    title = gettext_lazy("error")
    parameter_name = "error"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        """The day's groups; and the one chosen, when older, so that the sidebar and a
        bulk action's confirmation name it."""
        if not visibility.sees_every_run_in_full(request.user):
            return []
        choices = [
            (group.choice, f"{Truncator(group.choice).chars(60)} ({group.runs})")
            for group in failure_groups(clocks.now())
        ]
        chosen = self.value()
        if chosen and chosen not in dict(choices):
            choices.append((chosen, Truncator(chosen).chars(60)))
        return choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Run]) -> QuerySet[Run]:
        value = self.value()
        if not value:
            return queryset
        if not visibility.sees_every_run_in_full(request.user):
            raise DisallowedModelAdminLookup("filtering by error needs view_run")
        return queryset.filter(failed_with(value))

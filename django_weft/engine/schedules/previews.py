"""The stored schedules a preview plans: read from the database, with only what it reads.

:mod:`django_weft.timing.preview` plans rows without reading anything; ``runjobs --plan``
and the console's overview hand it the rows read here.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from django.db.models import Q

from django_weft.models import Schedule

#: What the preview reads of a row (see :class:`django_weft.timing.preview.PlannedRow`),
#: and ``enabled``. Loading only these makes reading 10,000 rows a good part quicker (no
#: args to decode, no bookkeeping fields to convert).
PREVIEW_FIELDS = (
    "name",
    "enabled",
    "cron",
    "timezone",
    "every",
    "at",
    "on_gap",
    "on_fold",
    "armed",
    "next_due",
    "last_started",
)


def enabled_schedules(
    *,
    jobs: Collection[str] | None = None,
    names: Collection[str] | None = None,
    due_by: datetime | None = None,
) -> list[Schedule]:
    """The enabled schedules in name order; with ``jobs`` or ``names``, only those.

    With ``due_by``, only the rows whose next due is by then or not known yet (the
    preview plans those afresh), so that a short preview costs what it lists, not every
    schedule. Rows come with only the fields the preview reads
    (``PREVIEW_FIELDS``).
    """
    rows = Schedule.objects.filter(enabled=True).only(*PREVIEW_FIELDS)
    if jobs:
        rows = rows.filter(job__in=jobs)
    if names:
        rows = rows.filter(name__in=names)
    if due_by is not None:
        rows = rows.filter(Q(next_due__isnull=True) | Q(next_due__lte=due_by))
    return list(rows.order_by("name"))


def schedules_enabled(names: Collection[str]) -> dict[str, bool]:
    """Whether each of the named schedules is enabled; names no schedule has are left out."""
    return dict(Schedule.objects.filter(name__in=names).values_list("name", "enabled"))

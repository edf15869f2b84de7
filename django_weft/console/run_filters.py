"""The run list's job and queue filters, whose choices are read without the run table.

Django's field filter lists a field's distinct values, a scan of the whole run table at
any size. These offer the deployed jobs and their queues, the ones the history counted
(:class:`~django_weft.models.RunTally`, a small table) and the paused queues, and filter
by the same lookups the field filters did (``job__exact``, ``queue__exact``), so every
link into the list keeps working.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from django_weft.jobs.registry import registry
from django_weft.models import PausedQueue, Run, RunTally
from django_weft.models.tally import GRAINS


class _NamedFilter(admin.SimpleListFilter):
    field: str

    def names(self) -> set[str]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # The 6-hour rows: the fewest that name every job and queue of the last month.
        counted = (
            RunTally.objects.filter(minutes=GRAINS[-1])
            .order_by()
            .values_list(self.field, flat=True)
            .distinct()
        )
        names = self.names() | set(counted)
        return [(name, name) for name in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Run]:
        value = self.value()
        return queryset.filter(**{self.field: value}) if value else queryset


class JobFilter(_NamedFilter):
    title = _("job")
    parameter_name = "job__exact"
    field = "job"

    def names(self) -> set[str]:
        return {job.name for job in registry}


class QueueFilter(_NamedFilter):
    title = _("queue")
    parameter_name = "queue__exact"
    field = "queue"

    def names(self) -> set[str]:
        return {job.queue for job in registry} | set(
            PausedQueue.objects.values_list("queue", flat=True)
        )

"""The run list's *phase* filter: a run's status, with *blocked* told apart from *queued*.

A queued run is *blocked* when the deployed code has no job of its name at its version
(:func:`django_weft.live.projections.phase`, the overview's *blocked* card): the filter
finds those among the queued runs' distinct job versions, so it reads one small query
whatever the number of finished runs. The overview's cards link to it, so the number on
a card and the list it opens agree.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from django_weft.jobs.registry import registry
from django_weft.models import Run, RunStatus

BLOCKED = "blocked"


def blocked() -> Q:
    """Whether a run is blocked: queued, and its job version not deployed here."""
    missing = Q(pk__in=[])
    for job, version in Run.objects.queued_job_versions():
        if registry.deployed(job, version) is None:
            missing |= Q(job=job, job_version=version)
    return Q(status=RunStatus.QUEUED) & missing


class PhaseFilter(admin.SimpleListFilter):
    """The phases the list's *phase* column shows: ``?phase=blocked``, ``?phase=queued``
    (queued and runnable), ``?phase=failed``..."""

    title = gettext_lazy("phase")
    parameter_name = "phase"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        statuses = [(str(status), str(status.label)) for status in RunStatus]
        return [statuses[0], (BLOCKED, BLOCKED), *statuses[1:]]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Run]) -> QuerySet[Run]:
        value = self.value()
        if value is None:
            return queryset
        if value == BLOCKED:
            return queryset.filter(blocked())
        if value == RunStatus.QUEUED:
            return queryset.filter(status=RunStatus.QUEUED).exclude(blocked())
        if value not in RunStatus.values:
            raise IncorrectLookupParameters(f'unknown phase "{value}"')
        return queryset.filter(status=value)

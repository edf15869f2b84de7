"""The run list's filter: the query parameters ``job``, ``status``, ``queue``, ``worker``
and ``owner``.

One reading of it for the list (``GET runs/?status=failed``) and for a bulk action on
every run that matches (``{"filter": {"status": "failed"}}``), so the runs a bulk action
touches are exactly the runs the same filter lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from django_weft.api.serializers import RunFilterSerializer
from django_weft.models import Run


def filter_runs(
    runs: QuerySet[Run], params: Mapping[str, Any], *, also_allowed: Iterable[str] = ()
) -> QuerySet[Run]:
    """``runs`` narrowed by each filter ``params`` gives (see :class:`RunFilterSerializer`).

    Raises DRF's ``ValidationError`` naming a bad value, or a parameter that is neither a
    filter nor one of ``also_allowed`` (the list's pagination and format): a misspelt
    filter is never taken for no filter, by the list or by a bulk action on every run.
    """
    filters = RunFilterSerializer(data=params, also_allowed=also_allowed)
    filters.is_valid(raise_exception=True)
    given = filters.validated_data
    for name in ("job", "status", "queue"):
        if name in given:
            runs = runs.filter(**{name: given[name]})
    if "worker" in given:
        runs = runs.filter(worker_id=given["worker"])
    if "owner" in given:
        username_field = get_user_model().USERNAME_FIELD
        runs = runs.filter(**{f"owner__{username_field}": given["owner"]})
    return runs

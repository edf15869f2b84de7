"""The run list's filter: the query parameters ``job``, ``status`` and ``owner``.

One reading of it for the list (``GET runs/?status=failed``) and for a bulk action on
every run that matches (``{"filter": {"status": "failed"}}``), so the runs a bulk action
touches are exactly the runs the same filter lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils.translation import gettext
from rest_framework import serializers

from django_weft.api.serializers import RunFilterSerializer
from django_weft.models import Run


def filter_runs(
    runs: QuerySet[Run], params: Mapping[str, Any], *, strict: bool = False
) -> QuerySet[Run]:
    """``runs`` narrowed by each filter ``params`` gives (see :class:`RunFilterSerializer`).

    Raises DRF's ``ValidationError`` naming a bad value. With ``strict`` a parameter the
    filter does not know is refused too: a bulk action must not take a misspelt filter
    for no filter and act on every run. The list ignores other parameters (``limit``).
    """
    if strict:
        known = set(RunFilterSerializer().fields)
        unknown = sorted(set(params) - known)
        if unknown:
            message = gettext("Unknown filter; filter by %(known)s.") % {
                "known": ", ".join(sorted(known))
            }
            raise serializers.ValidationError({name: [message] for name in unknown})
    filters = RunFilterSerializer(data=params)
    filters.is_valid(raise_exception=True)
    given = filters.validated_data
    if "job" in given:
        runs = runs.filter(job=given["job"])
    if "status" in given:
        runs = runs.filter(status=given["status"])
    if "owner" in given:
        username_field = get_user_model().USERNAME_FIELD
        runs = runs.filter(**{f"owner__{username_field}": given["owner"]})
    return runs

"""The body of a bulk action on runs: ``{"ids": [...]}`` or ``{"filter": {...}}``.

What the body selects is read here; what is done to each run is the service layer's
(:func:`django_weft.operations.bulk_for`). Anything wrong with the body is a 400 naming
it, and nothing is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext
from rest_framework import serializers
from rest_framework.settings import api_settings

from django_weft import operations
from django_weft.api.run_filters import filter_runs
from django_weft.models import Run

#: The fields a bulk body may have: exactly one of them.
SELECTIONS = ("ids", "filter")


def parse_selection(data: object, runs: QuerySet[Run]) -> dict[str, Any]:
    """The selection ``data`` asks for, as :func:`~django_weft.operations.bulk_for`'s
    keyword: ``ids`` (parsed run ids) or ``matching`` (``runs`` narrowed by the filter).

    Raises DRF's ``ValidationError``: a body that is not an object, a field that is not
    ``ids`` or ``filter``, both or neither of them, bad ids, a bad or unknown filter.
    """
    if not isinstance(data, Mapping):
        problem = gettext("Expected an object, but got %(type)s.") % {"type": type(data).__name__}
        raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [problem]})
    unknown = sorted(set(data) - set(SELECTIONS))
    if unknown:
        problem = gettext("Unknown field; send ids or filter.")
        raise serializers.ValidationError({name: [problem] for name in unknown})
    given = [name for name in SELECTIONS if name in data]
    if len(given) != 1:
        problem = (
            gettext("Send either ids or filter, not both.")
            if given
            else gettext("Send ids (a list of run ids) or filter (the run list's filters).")
        )
        raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [problem]})
    if "ids" in data:
        return {"ids": operations.parse_ids(data["ids"])}
    chosen = data["filter"]
    if not isinstance(chosen, Mapping):
        problem = gettext("Expected an object of filters, not %(type)s.") % {
            "type": type(chosen).__name__
        }
        raise serializers.ValidationError({"filter": [problem]})
    try:
        return {"matching": filter_runs(runs, chosen)}
    except serializers.ValidationError as error:
        raise serializers.ValidationError({"filter": error.detail}) from error

"""Columns and read-only fields that print a moment as every console page does:
``2026-12-01 10:55:03 UTC``, on the wall clock of the current time zone, with its name
(:func:`django_weft.console.formatting.moment`), not in Django's default date format.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.utils import timezone

from django_weft.console import formatting

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


def moment_column(field: str, description: StrOrPromise) -> Callable[[Any, Any], str]:
    """A ``ModelAdmin`` method showing the row's ``field`` (an aware datetime), sorted by it."""

    @admin.display(description=description, ordering=field)
    def column(model_admin: Any, row: Any) -> str:
        value: datetime | None = getattr(row, field)
        return formatting.moment(value, timezone.get_current_timezone())

    return column

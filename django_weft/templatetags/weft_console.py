"""Filters the console's templates print moments, ages and run ids with."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone

from django_weft.console import formatting

register = template.Library()


@register.filter
def weft_moment(value: datetime | None) -> str:
    """To the second, on the wall clock of the current time zone, with its name."""
    return formatting.moment(value, timezone.get_current_timezone())


@register.filter
def weft_age(value: datetime | None, now: datetime) -> str:
    """How long before ``now`` the moment ``value`` was: ``3 min 05 s``."""
    return formatting.duration(now - value) if value is not None else "-"


@register.filter
def weft_relative(value: datetime | None, now: datetime) -> str:
    """``in 42 min 05 s`` or ``3 min 05 s ago`` from ``now``, ticking on in the page."""
    return formatting.relative_html(value, now)


@register.filter
def weft_short_id(value: object) -> str:
    return formatting.short_id(value)

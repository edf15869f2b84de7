"""The admin's paginator for big lists: its count is
:func:`~django_weft.models.counting.estimated_count`'s."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from django.core.paginator import Paginator
from django.db.models import QuerySet

from django_weft.models.counting import estimated_count

if TYPE_CHECKING:
    PaginatorBase = Paginator[Any]
else:
    # Paginator is generic only to the type checker.
    PaginatorBase = Paginator


class EstimatedCountPaginator(PaginatorBase):
    """A paginator whose count is :func:`estimated_count`'s (so the last page of a huge
    list may be a little off, as its count is)."""

    @cached_property
    def count(self) -> int:
        object_list = self.object_list
        if isinstance(object_list, QuerySet):
            return estimated_count(object_list)
        return len(object_list)

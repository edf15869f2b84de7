"""What the console's pages of flows (groups, workflows) share: they are read-only, and
open to whoever may open the run list.

A flow's rows are written by its start and its runs' finishes, never by a form; what an
operator does to a flow (abort, seal, retry a step) is an action or a button that goes
through the service layer.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from django_weft import access


class FlowPage:
    """Mixed into a flow's ``ModelAdmin``, before it."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Whoever may open the run list opens the flows (``view_run`` or
        ``change_run``): which runs belong together and how far they got is in every
        run's guest view, and no flow page shows args or results."""
        user = request.user
        return user.has_perm(access.VIEW_RUN) or user.has_perm(access.CHANGE_RUN)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

"""DRF permission classes applying the rules of :mod:`django_weft.access` per action."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework.permissions import BasePermission

from django_weft.access import (
    ADD_RUN,
    ADD_SCHEDULE,
    CHANGE_RUN,
    CHANGE_SCHEDULE,
    DELETE_SCHEDULE,
    may,
    refusal,
)

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView


class _ActionPermission(BasePermission):
    """Checks the permission that the view's current action needs.

    ``on_view`` maps an action to the model permission required to call it at all;
    ``on_object`` maps an action to the permission that, failing ownership of the
    object, allows it. Actions in neither are open to every signed-in user. DRF builds
    a fresh instance per request, so setting ``message`` on refusal is safe.
    """

    on_view: dict[str, tuple[str, str]] = {}
    on_object: dict[str, tuple[str, str]] = {}

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        needed = self.on_view.get(getattr(view, "action", None) or "")
        if needed is None:
            return True
        verb, permission = needed
        self.message = refusal(verb, permission)
        return bool(request.user.has_perm(permission))

    def has_object_permission(self, request: Request, view: APIView, obj: Any) -> bool:
        needed = self.on_object.get(getattr(view, "action", None) or "")
        if needed is None:
            return True
        verb, permission = needed
        self.message = refusal(verb, permission, or_owner=True)
        return may(request.user, permission, obj)


class RunPermission(_ActionPermission):
    """Anyone signed in reads runs; starting needs add_run; aborting needs ownership or
    change_run."""

    on_view = {"create": ("start runs", ADD_RUN)}
    on_object = {"abort": ("abort this run", CHANGE_RUN)}


class SchedulePermission(_ActionPermission):
    """Anyone signed in reads schedules; creating needs add_schedule; changing, deleting
    and running now need ownership or the change/delete permission."""

    on_view = {"create": ("create schedules", ADD_SCHEDULE)}
    on_object = {
        "update": ("change this schedule", CHANGE_SCHEDULE),
        "partial_update": ("change this schedule", CHANGE_SCHEDULE),
        "destroy": ("delete this schedule", DELETE_SCHEDULE),
        "run_now": ("run this schedule now", CHANGE_SCHEDULE),
    }

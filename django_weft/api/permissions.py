"""Who may see and do what through the API, in Django's model permissions on Run and Schedule.

The rules, in one place so that views, serializers and the schema agree:

- every signed-in user may list and read runs and schedules; anonymous requests are
  refused (403, or 401 when the project's first authentication class asks for it);
- the *owner* of a run or schedule (``owner == request.user``) always sees it in full
  and may abort the run, or change, delete and run the schedule now;
- ``django_weft.view_run`` / ``view_schedule`` see every run / schedule in full (an
  operator); everyone else sees other people's rows as a guest;
- ``add_run`` may start runs, ``change_run`` may abort anyone's run;
- ``add_schedule`` may create schedules (owned by whoever creates them),
  ``change_schedule`` may change and run anyone's schedule now, ``delete_schedule`` may
  delete anyone's schedule.

A refusal names the permission that is missing, so a client can tell an operator what
to grant instead of guessing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from rest_framework.permissions import BasePermission

if TYPE_CHECKING:
    from rest_framework.request import Request
    from rest_framework.views import APIView

VIEW_RUN = "django_weft.view_run"
ADD_RUN = "django_weft.add_run"
CHANGE_RUN = "django_weft.change_run"
VIEW_SCHEDULE = "django_weft.view_schedule"
ADD_SCHEDULE = "django_weft.add_schedule"
CHANGE_SCHEDULE = "django_weft.change_schedule"
DELETE_SCHEDULE = "django_weft.delete_schedule"


class User(Protocol):
    """A request's user, signed in or not, of whatever model the project configures.

    Only what these rules use, so a swapped-in user model with Django's permission API
    (``PermissionsMixin`` or its own ``has_perm``) qualifies.
    """

    @property
    def pk(self) -> Any: ...

    @property
    def is_authenticated(self) -> bool: ...

    def has_perm(self, perm: str, obj: Any = ...) -> bool: ...


class Owned(Protocol):
    """A row with an owner: a run or a schedule."""

    @property
    def owner_id(self) -> Any: ...


def owns(user: User, obj: Owned) -> bool:
    """Whether ``user`` is the row's owner; a row without an owner has none."""
    return bool(user.is_authenticated) and obj.owner_id is not None and obj.owner_id == user.pk


def _may(user: User, permission: str, obj: Owned) -> bool:
    return owns(user, obj) or user.has_perm(permission)


def sees_run_in_full(user: User, run: Owned) -> bool:
    """Owner view (state, result, error, every arg) rather than the guest view."""
    return _may(user, VIEW_RUN, run)


def sees_schedule_in_full(user: User, schedule: Owned) -> bool:
    """Owner view (args, policies, last error) rather than the guest view."""
    return _may(user, VIEW_SCHEDULE, schedule)


def _needs(verb: str, permission: str, *, or_owner: bool = False) -> str:
    owner = ", or to be its owner" if or_owner else ""
    return f"you may not {verb} (needs {permission}{owner})"


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
        self.message = _needs(verb, permission)
        return bool(request.user.has_perm(permission))

    def has_object_permission(self, request: Request, view: APIView, obj: Any) -> bool:
        needed = self.on_object.get(getattr(view, "action", None) or "")
        if needed is None:
            return True
        verb, permission = needed
        self.message = _needs(verb, permission, or_owner=True)
        return _may(request.user, permission, obj)


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

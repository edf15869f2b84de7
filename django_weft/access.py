"""Who may see and do what with runs and schedules: one set of rules for the API,
the live sockets and the admin's views, in Django's model permissions.

- the *owner* of a run or schedule (``owner == user``) always sees it in full, may
  abort the run, and may change, delete and run the schedule now;
- ``django_weft.view_run`` / ``view_schedule`` see every run / schedule in full (an
  operator); everyone else signed in sees other people's rows as a guest;
- ``add_run`` may start runs, ``change_run`` may abort anyone's run, ``delete_run`` may
  delete anyone's finished run (an owner may delete their own);
- ``add_schedule`` may create schedules, ``change_schedule`` may change and run anyone's
  schedule now, ``delete_schedule`` may delete anyone's schedule;
- ``add_module`` may store modules (the creator owns them); a module's owner or
  ``manage_module`` (never ``change_module`` alone) may change, approve and delete it;
  ``grant_host_function`` may grant host functions; a run or schedule may call a module
  if its owner owns the module or holds ``use_module``.

A refusal names the permission that is missing, so a client can tell an operator what
to grant instead of guessing.

Work on many rows at once (a bulk action by filter) asks the same rules of a queryset:
each predicate it needs has a twin beside it that narrows a queryset to the rows it
allows (:func:`narrow`), so rows the user may not touch are never read one by one.

A schedule starts its runs as its owner, so each of its fires asks again whether that
owner may start runs now (:func:`owners_who_may_start`, :func:`owner_refusal`): active,
and holding ``add_run``. A schedule without an owner is the deployment's own (made in
code, a fixture or the shell) and fires as before, as no one; one whose owner's user was
deleted is not, and fires nothing until someone who may start its runs takes it over, and
so becomes its owner (``django_weft.operations.schedules.require_take_over``).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from django.contrib import auth
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import PermissionsMixin
from django.db.models import Model, QuerySet
from django.utils.translation import gettext as _

from django_weft.conf import weft_settings
from django_weft.loading import import_setting

if TYPE_CHECKING:
    from django_weft.models import Schedule

VIEW_RUN = "django_weft.view_run"
ADD_RUN = "django_weft.add_run"
CHANGE_RUN = "django_weft.change_run"
DELETE_RUN = "django_weft.delete_run"
VIEW_SCHEDULE = "django_weft.view_schedule"
ADD_SCHEDULE = "django_weft.add_schedule"
CHANGE_SCHEDULE = "django_weft.change_schedule"
DELETE_SCHEDULE = "django_weft.delete_schedule"
PAUSE_QUEUE = "django_weft.pause_queue"
QUIET_WORKER = "django_weft.quiet_workerprocess"
VIEW_LIMIT = "django_weft.view_flowlimit"
ADD_LIMIT = "django_weft.add_flowlimit"
CHANGE_LIMIT = "django_weft.change_flowlimit"
DELETE_LIMIT = "django_weft.delete_flowlimit"
ADD_MODULE = "django_weft.add_module"
MANAGE_MODULE = "django_weft.manage_module"
GRANT_HOST_FUNCTION = "django_weft.grant_host_function"
USE_MODULE = "django_weft.use_module"

_Row = TypeVar("_Row", bound=Model)


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
    """A row with an owner: a run, a group, a workflow, a schedule or a stored module."""

    @property
    def owner_id(self) -> Any: ...


def owns(user: User, obj: Owned) -> bool:
    """Whether ``user`` is the row's owner, and still an active user; a row without an
    owner has none. A deactivated owner owns nothing any more, as Django's backends give
    an inactive user no permission."""
    return (
        bool(user.is_authenticated)
        and bool(getattr(user, "is_active", True))
        and obj.owner_id is not None
        and obj.owner_id == user.pk
    )


def may(user: User, permission: str, obj: Owned) -> bool:
    return owns(user, obj) or user.has_perm(permission)


def narrow(user: User, permission: str, rows: QuerySet[_Row]) -> QuerySet[_Row]:
    """The rows of ``rows`` (owned rows: runs, schedules, modules) on which :func:`may`
    allows ``user`` ``permission``, as a filter of the query rather than a judgement of
    each row read: all of them with the permission, else the user's own (:func:`owns`:
    none for a signed-out or deactivated user).

    Work on many rows starts from it, so that rows the user may not touch cost nothing;
    each row it keeps is still judged by the predicate (tests hold the two to agree).
    """
    if user.has_perm(permission):
        return rows
    if not (user.is_authenticated and getattr(user, "is_active", True)) or user.pk is None:
        return rows.none()
    return rows.filter(owner_id=user.pk)


def sees_run_in_full(user: User, run: Owned) -> bool:
    """Owner view (state, result, error, every arg) rather than the guest view."""
    return may(user, VIEW_RUN, run)


def runs_seen_in_full(user: User, runs: QuerySet[_Row]) -> QuerySet[_Row]:
    """The runs of ``runs`` that :func:`sees_run_in_full` allows ``user``, as a filter."""
    return narrow(user, VIEW_RUN, runs)


def sees_schedule_in_full(user: User, schedule: Owned) -> bool:
    """Owner view (args, policies, last error) rather than the guest view."""
    return may(user, VIEW_SCHEDULE, schedule)


def refusal(verb: str, permission: str, *, or_owner: bool = False) -> str:
    """The refusal of ``verb`` (already in the reader's language) for want of ``permission``."""
    words = {"verb": verb, "permission": permission}
    if or_owner:
        return _("you may not %(verb)s (needs %(permission)s, or to be its owner)") % words
    return _("you may not %(verb)s (needs %(permission)s)") % words


def may_start_runs(user: User) -> bool:
    return bool(user.is_authenticated and user.has_perm(ADD_RUN))


def may_quiet_workers(user: User) -> bool:
    """Quiet and resume worker processes: every worker's, as a pause is every queue's."""
    return user.has_perm(QUIET_WORKER)


def may_abort_run(user: User, run: Owned) -> bool:
    return may(user, CHANGE_RUN, run)


def may_signal_run(user: User, run: Owned) -> bool:
    """A signal steers the run as an abort does (it wakes a wait the job chose to
    make, e.g. an approval): the same right."""
    return may(user, CHANGE_RUN, run)


def may_change_group(user: User, group: Owned) -> bool:
    """Adding to a group, sealing it and aborting it steer its runs as an abort does:
    its owner, or ``change_run``."""
    return may(user, CHANGE_RUN, group)


def may_change_workflow(user: User, workflow: Owned) -> bool:
    """Aborting a workflow and retrying its steps steer its runs as an abort does: its
    owner, or ``change_run``."""
    return may(user, CHANGE_RUN, workflow)


def abortable_runs(user: User, runs: QuerySet[_Row]) -> QuerySet[_Row]:
    """The runs of ``runs`` that :func:`may_abort_run` allows ``user``, as a filter."""
    return narrow(user, CHANGE_RUN, runs)


def may_delete_run(user: User, run: Owned) -> bool:
    return may(user, DELETE_RUN, run)


def deletable_runs(user: User, runs: QuerySet[_Row]) -> QuerySet[_Row]:
    """The runs of ``runs`` that :func:`may_delete_run` allows ``user``, as a filter."""
    return narrow(user, DELETE_RUN, runs)


def may_manage_module(user: User, module: Owned) -> bool:
    """Whether ``user`` may change, approve or delete ``module``: ``change_module`` alone
    is not enough for someone else's, since what a module runs runs as everyone who
    calls it."""
    return may(user, MANAGE_MODULE, module)


def may_grant_host_functions(user: User) -> bool:
    return bool(user.is_authenticated and user.has_perm(GRANT_HOST_FUNCTION))


def may_use_module(owner: User | None, module: Owned) -> bool:
    """Whether a run or schedule of ``owner`` may call ``module``.

    A start without an owner is the project's own code (a trusted call), which may call
    any module. An inactive owner may call none.
    """
    if owner is None:
        return True
    return bool(getattr(owner, "is_active", True)) and may(owner, USE_MODULE, module)


def module_use_refusal(name: str) -> str:
    """Why a start of ``name`` is refused, in the words the start and the run both use."""
    return _(
        'only its owner and users with %(permission)s may call the stored module "%(name)s"'
    ) % {
        "permission": USE_MODULE,
        "name": name,
    }


#: The reason a schedule whose owner's user was deleted does not fire.
OWNER_REMOVED = "owner was removed"

#: What decides a permission in ``ModelBackend``: a backend whose every one of these is
#: ``ModelBackend``'s own answers ``has_perm`` as its ``with_perm`` query does.
_MODEL_BACKEND_PERMISSIONS = (
    "has_perm",
    "with_perm",
    "get_all_permissions",
    "get_user_permissions",
    "get_group_permissions",
    "_get_permissions",
    "_get_user_permissions",
    "_get_group_permissions",
)


def owners_who_may_start(owners: Iterable[Any]) -> set[Any]:
    """The pks of those of ``owners`` (users) who may start runs now: active, and
    ``has_perm("django_weft.add_run")``.

    Asked for a whole batch of due schedules at once. When Django's rules decide (the
    user model's ``has_perm`` is ``PermissionsMixin``'s and every backend that answers
    ``has_perm`` decides as ``ModelBackend`` does), it is one query, whatever the number
    of owners: ``ModelBackend.with_perm`` (superusers included). Otherwise each distinct
    owner's ``has_perm`` is asked, once, at whatever that costs its backends.
    """
    active = {owner.pk: owner for owner in owners if getattr(owner, "is_active", True)}
    if not active:
        return set()
    if _permissions_are_djangos():
        holders = ModelBackend().with_perm(ADD_RUN).filter(pk__in=list(active))
        return set(holders.values_list("pk", flat=True))
    return {pk for pk, owner in active.items() if owner.has_perm(ADD_RUN)}


def _permissions_are_djangos() -> bool:
    """Whether ``user.has_perm`` is Django's own: ``PermissionsMixin`` over backends
    that decide permissions as ``ModelBackend`` does (or answer none)."""
    if getattr(auth.get_user_model(), "has_perm", None) is not PermissionsMixin.has_perm:
        return False
    return all(
        not hasattr(backend, "has_perm")
        or all(
            getattr(type(backend), name, None) is getattr(ModelBackend, name, None)
            for name in _MODEL_BACKEND_PERMISSIONS
        )
        for backend in auth.get_backends()
    )


def owner_refusal(schedule: Schedule, may_start: set[Any]) -> str:
    """Why ``schedule`` may not start its runs as its owner now, or "" when it may.

    ``may_start`` holds the pks :func:`owners_who_may_start` found for its owner (and
    others'). A schedule without an owner may, unless its owner's user was deleted.
    """
    owner = schedule.owner
    if owner is None:
        return OWNER_REMOVED if schedule.owner_removed else ""
    name = owner.get_username()
    if not getattr(owner, "is_active", True):
        return _("owner %(name)s is inactive") % {"name": name}
    if owner.pk not in may_start:
        return _("owner %(name)s lacks %(permission)s") % {"name": name, "permission": ADD_RUN}
    return ""


def schedule_owner_refusal(schedule: Schedule) -> str:
    """:func:`owner_refusal` for one schedule, asked on its own (*run now*, a buffered fire)."""
    owners = [schedule.owner] if schedule.owner is not None else []
    return owner_refusal(schedule, owners_who_may_start(owners))


def may_read_metrics(user: User, token: str | None) -> bool:
    """Whether a scrape may read the metrics: with the bearer token ``WEFT_METRICS_TOKEN``
    (Prometheus), or as a signed-in user with ``view_run``, who sees every run anyway.

    Without a token set, only such users may; the metrics are never public. The token is
    compared in constant time.
    """
    expected = weft_settings.METRICS_TOKEN
    if expected and token is not None and hmac.compare_digest(token.encode(), expected.encode()):
        return True
    return bool(user.is_authenticated and user.has_perm(VIEW_RUN))


def document_access(user: Any, key: str) -> bool:
    """The default ``WEFT_DOCUMENT_ACCESS``: ``view_document`` watches any document."""
    return bool(user.is_authenticated and user.has_perm("django_weft.view_document"))


def may_watch_document(user: Any, key: str) -> bool:
    """Whether ``user`` may watch ``key``; run state comes with runs, never on its own."""
    if key.startswith("run:"):
        return False
    return bool(import_setting(weft_settings.DOCUMENT_ACCESS)(user, key))

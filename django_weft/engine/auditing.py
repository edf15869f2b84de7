"""Putting an operator action on record: a weft audit record, and an entry in Django's admin
history (``LogEntry``) where the object has a history page.

:mod:`django_weft.operations` records each checked action that changed something, inside
the action's own transaction: an action that is refused writes nothing, one rolled back
takes its record with it. Which entry point the action came through is not an argument
of every operation but a context variable each entry point sets around its calls
(:func:`entry_point`): the admin's, the API's and the socket's; a call that sets none is
``python`` (a project's view, a shell, a job). A context variable follows a request
through ``sync_to_async`` and stays in the thread or task that set it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction

from django_weft.access import User
from django_weft.models import AuditAction, AuditRecord, EntryPoint, PausedQueue

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

_entry: ContextVar[EntryPoint] = ContextVar("django_weft_entry_point", default=EntryPoint.PYTHON)

#: The action flags of Django's admin history (``ADDITION``, ``CHANGE`` and ``DELETION``
#: of ``django.contrib.admin.models``, a module that cannot be imported in a project
#: without the admin).
ADDITION, CHANGE, DELETION = 1, 2, 3
#: The flag of each action that adds or deletes its object; the others change it.
FLAGS = {
    AuditAction.START: ADDITION,
    AuditAction.SCHEDULE_CREATE: ADDITION,
    AuditAction.SCHEDULE_DELETE: DELETION,
}


@contextmanager
def entry_point(name: str) -> Iterator[None]:
    """Record what the service layer does inside as coming through ``name``: ``admin``,
    ``api``, ``socket`` or ``python``."""
    token = _entry.set(EntryPoint(name))
    try:
        yield
    finally:
        _entry.reset(token)


def record(
    user: User | None,
    action: str,
    obj: models.Model,
    *,
    now: datetime,
    text: str = "",
    changed: Iterable[str] = (),
    details: Mapping[str, Any] | None = None,
) -> AuditRecord:
    """Record that ``user`` did ``action`` (an :class:`AuditAction`) to ``obj`` at ``now``.

    ``obj`` is a saved row (a run, a schedule, a module, a document; a schedule being
    deleted is recorded before it goes) or, for a queue, a :class:`PausedQueue` naming it.
    ``text`` is the short sentence the console and the history show (default: the
    action's label), ``changed`` the names of the fields an edit changed, ``details``
    small JSON facts (the run a *run now* started). Must be called inside the action's
    transaction.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("record() belongs inside the transaction of the action it records")
    chosen = AuditAction(action)
    via = _entry.get()
    actor = _actor(user)
    said = (text or chosen.label[:1].upper() + chosen.label[1:])[:300]
    if isinstance(obj, PausedQueue):
        object_type, object_id = "queue", obj.queue
    elif obj.pk is None:
        raise ValueError(f"record() needs a saved {obj._meta.model_name}: it has no id yet")
    else:
        object_type, object_id = str(obj._meta.model_name), str(obj.pk)
    recorded = AuditRecord.objects.create(
        at=now,
        actor=cast(Any, actor),  # AUTH_USER_MODEL, whatever class it is
        actor_name=actor.get_username() if actor is not None else "",
        action=chosen,
        object_type=object_type,
        object_id=object_id,
        object_repr=str(obj)[:200],
        text=said,
        changed=list(changed),
        details=dict(details or {}),
        via=via,
    )
    if actor is not None and object_type != "queue" and apps.is_installed("django.contrib.admin"):
        _log_entry(actor, obj, FLAGS.get(chosen, CHANGE), f"{said} (through {via.label}).", now)
    return recorded


def _actor(user: User | None) -> AbstractBaseUser | None:
    """The user row behind ``user``; None for a signed-out caller or none at all."""
    if user is None or not user.is_authenticated or user.pk is None:
        return None
    return cast("AbstractBaseUser", user)


def _log_entry(
    actor: AbstractBaseUser, obj: models.Model, flag: int, message: str, now: datetime
) -> None:
    """The object's admin history entry, as ``LogEntry.objects.log_actions`` writes it
    (Django 5.1 and later; ``log_action`` is gone in 6.0), at the clock's ``now``."""
    log_entry = apps.get_model("admin", "LogEntry")
    log_entry._default_manager.create(
        action_time=now,
        user_id=actor.pk,
        content_type=ContentType.objects.get_for_model(obj, for_concrete_model=False),
        object_id=str(obj.pk),
        object_repr=str(obj)[:200],
        action_flag=flag,
        change_message=message,
    )

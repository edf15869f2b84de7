"""Sending a signal to a run (``ctx.wait_for`` receives it): the trusted call and the
checked ``*_for`` one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.engine.flows import signals
from django_weft.live import publisher
from django_weft.live.changes import Changes
from django_weft.models import AuditAction, Run, Signal
from django_weft.operations.base import as_owner, record, require, signed_in
from django_weft.timing import clocks

#: The fields a signal's input may have (a socket's frame adds its ``request_id``).
SIGNAL_FIELDS = ("name", "payload")


def parse_signal(data: object, *, also: tuple[str, ...] = ()) -> tuple[str, Any]:
    """The ``(name, payload)`` a client's ``{"name": ..., "payload": ...}`` asks to send.

    The one check of a signal's input, for the API's body and the socket's frame alike:
    ``name`` is required, ``payload`` is any JSON (null when left out), and a field it
    does not know (but those of ``also``) is refused naming the ones it does. Raises
    ``ValidationError`` naming every bad field; the name and payload are checked again,
    for what can be stored, when the signal is sent.
    """
    if not isinstance(data, Mapping):
        raise ValidationError(
            {NON_FIELD_ERRORS: [f"Expected an object, but got {type(data).__name__}."]}
        )
    accepted = sorted({*SIGNAL_FIELDS, *also})
    errors: dict[str, list[str]] = {
        str(name): [f"Unknown field; a signal accepts: {', '.join(accepted)}."]
        for name in data
        if name not in accepted
    }
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        errors["name"] = ["This field is required: the name of the signal to send."]
    if errors:
        raise ValidationError(errors)
    return str(name), data.get("payload")


def send_signal(run: Run, name: str, payload: Any = None) -> Signal:
    """Send signal ``name`` with ``payload`` to ``run``, as the deployment (no user).

    A run waiting for it goes on; any other unfinished run keeps it for its wait.
    Raises :class:`~django_weft.exceptions.InvalidSignal` for a name or payload that
    cannot be sent, :class:`~django_weft.exceptions.RunFinished` for a finished run.
    """
    return _send(run, name, payload, sender=None)


asend_signal = sync_to_async(send_signal)


def send_signal_for(user: User, run: Run, name: str, payload: Any = None) -> Signal:
    """:func:`send_signal` as ``user``, who must own the run or have ``change_run``;
    on the audit trail with the signal's name."""
    signed_in(user)
    require(
        access.may_signal_run(user, run),
        _("signal run %(run)s") % {"run": run.pk},
        access.CHANGE_RUN,
        or_owner=True,
    )
    with transaction.atomic():
        signal = _send(run, name, payload, sender=user)
        record(
            user,
            AuditAction.SIGNAL,
            run,
            text=f'Sent signal "{name}"',
            details={"signal": name},
        )
    return signal


asend_signal_for = sync_to_async(send_signal_for)


def _send(run: Run, name: str, payload: Any, *, sender: User | None) -> Signal:
    changes = Changes()
    owner = as_owner(sender) if sender is not None and sender.is_authenticated else None
    signal = signals.send_signal(
        run.pk, name, payload, sender=owner, now=clocks.now(), changes=changes
    )
    publisher.publish(changes)
    return signal

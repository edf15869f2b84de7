"""Sending a signal to a run: kept until a wait of the run receives it.

A run waiting for a signal of that name (``ctx.wait_for``) is queued again in the same
transaction, to receive it; any other unfinished run keeps it for its wait to come. The
run's row is locked first, so that a worker recording the run ``waiting`` at the same
moment either sees the signal or is seen (see :mod:`~django_weft.engine.outcomes.
suspending`): a signal never slips between a wait and its sleep. A run that has finished
refuses it, since nothing would ever receive it.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.db import transaction

from django_weft.exceptions import InvalidSignal, RunFinished, RunNotFound
from django_weft.jobs.durable import check_signal_name
from django_weft.jobs.storable import find_unstorable
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus, Signal

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


def check_signal(name: Any, payload: Any) -> None:
    """Refuse a signal whose name or payload cannot be sent, naming which."""
    check_signal_name(name)
    try:
        json.dumps(payload)
    except (TypeError, ValueError) as error:
        raise InvalidSignal("payload", f"is not JSON: {error}") from None
    found = find_unstorable(payload, "payload")
    if found is not None:
        raise InvalidSignal("payload", f"{found.where}: {found.problem}")


def send_signal(
    run_id: uuid.UUID,
    name: str,
    payload: Any = None,
    *,
    sender: AbstractBaseUser | None,
    now: datetime,
    changes: Changes,
) -> Signal:
    """Send signal ``name`` with ``payload`` to run ``run_id``; the signal as kept.

    Raises :class:`~django_weft.exceptions.RunNotFound` or
    :class:`~django_weft.exceptions.RunFinished`, having written nothing.
    """
    check_signal(name, payload)
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            raise RunNotFound(run_id)
        if run.is_finished:
            raise RunFinished(run.pk, run.status)
        signal = Signal.objects.create(
            run=run,
            name=name,
            payload=payload,
            sent_at=now,
            sent_by=cast(Any, sender),  # AUTH_USER_MODEL, whatever class the project swapped in
        )
        if run.status == RunStatus.WAITING and run.awaiting == name:
            Run.objects.filter(pk=run.pk, status=RunStatus.WAITING).update(
                status=RunStatus.QUEUED, resuming=True, wake_at=None, awaiting=""
            )
            changes.run(run.pk)
    return signal

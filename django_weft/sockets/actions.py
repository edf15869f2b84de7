"""What a socket's frames read and write, run in the database thread.

Each function takes the socket's user and returns plain dicts ready to send: the runs as
that user may see them (:mod:`django_weft.live.projections`). Starts, aborts and
signals go through :mod:`django_weft.operations`, which decides who may do what and publishes the
change; a refusal raises :class:`~django_weft.sockets.frames.FrameError`.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from django_weft import access, operations
from django_weft.access import User
from django_weft.conf import weft_settings
from django_weft.live import projections
from django_weft.models import Document, Run
from django_weft.models.run import RunQuerySet
from django_weft.sockets.frames import FrameError, refusals

#: Runs (or documents) as the socket's user may see them, ready to send.
Views = list[dict[str, Any]]


def permissions(user: User) -> tuple[bool, bool]:
    """Whether ``user`` is an operator and may start runs: what the client is told, to
    draw its buttons; each request is still decided by :mod:`django_weft.operations`."""
    operator = user.is_authenticated and user.has_perm(access.VIEW_RUN)
    return operator, access.may_start_runs(user)


def snapshot(user: User) -> tuple[Views, str | None]:
    """Unfinished runs (newest first, at most a page) and the most recent finished ones.

    Bounded whoever connects: a snapshot with more unfinished runs than a page names the
    run the next page starts after (else None).
    """
    unfinished, following = _unfinished_page(None)
    recent = _with_views().latest_finished()[: weft_settings.LIVE_RECENT_RUNS]
    return _views(user, [*unfinished, *recent]), following


def page(user: User, after: uuid.UUID) -> tuple[Views, str | None]:
    """The page of unfinished runs after the run ``after``, and where the next one starts."""
    runs, following = _unfinished_page(after)
    return _views(user, runs), following


def start(user: User, fields: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Start what a ``start`` frame's ``fields`` ask for, as ``user``: its ``request_id``
    (the run's idempotency key) and the run as they see it."""
    with refusals(), operations.entry_point("socket"):
        try:
            request = operations.parse_start(user, fields, key_field="request_id")
        except ValidationError as error:
            # Worded as the other frames' field errors are (``invalid abort frame``).
            raise FrameError("invalid", "invalid start frame", fields=error.message_dict) from None
        run, _created = operations.start_for(user, request)
    return request.key, projections.run_for(user, _with_views().get(pk=run.pk))


def abort(user: User, run_id: uuid.UUID) -> None:
    """Request an abort of the run ``run_id``; asked before and not finished, it stands."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise FrameError("not_found", _("no run %(run)s") % {"run": run_id})
    with refusals(), operations.entry_point("socket"):
        operations.abort_for(user, run)


def signal(user: User, run_id: uuid.UUID, name: str, payload: Any) -> None:
    """Send signal ``name`` with ``payload`` to the run ``run_id``."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise FrameError("not_found", _("no run %(run)s") % {"run": run_id})
    with refusals(), operations.entry_point("socket"):
        operations.send_signal_for(user, run, name, payload)


def documents(user: User, keys: list[str]) -> Views:
    """The documents at ``keys``, if ``user`` may watch every one of them."""
    refused = [key for key in keys if not access.may_watch_document(user, key)]
    if refused:
        raise FrameError(
            "forbidden", _("you may not watch: %(keys)s") % {"keys": ", ".join(refused)}
        )
    stored = {d.key: d for d in Document.objects.filter(key__in=keys)}
    # A document nobody wrote yet is announced empty (revision null, data null).
    return [
        projections.document(d)
        if (d := stored.get(key)) is not None
        else {"key": key, "revision": None, "data": None}
        for key in keys
    ]


def _unfinished_page(after: uuid.UUID | None) -> tuple[list[Run], str | None]:
    """A page of unfinished runs, and the last one's id if more follow."""
    try:
        newest = _with_views().newest_unfinished(after=after)
    except Run.DoesNotExist:
        raise FrameError("not_found", _("no run %(run)s") % {"run": after}) from None
    size = weft_settings.LIVE_SNAPSHOT_LIMIT
    runs = list(newest[: size + 1])
    if len(runs) > size:
        return runs[:size], str(runs[size - 1].pk)
    return runs, None


def _with_views() -> RunQuerySet:
    return Run.objects.select_related("owner", "state", "schedule")


def _views(user: User, runs: list[Run]) -> Views:
    return [projections.run_for(user, run) for run in runs]

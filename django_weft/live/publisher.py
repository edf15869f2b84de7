"""Publishing changes to the live sockets, after the transaction that made them commits.

Every change to a run (started, claimed, finished, abort requested), to a run's state
document and to an application document is sent to channel-layer groups with
``transaction.on_commit``, from whichever process made it: the web process, ``runjobs``
or a shell. The layer that made a change hands its :class:`~django_weft.live.changes.Changes`
to :func:`publish`. Both views of a run (:mod:`django_weft.live.projections`) are computed
here, once per change: operators and the run's owner get the full view, every other
watcher the same guest view.

With the in-memory layer only sockets in the same process can hear, so a process that
has no socket skips the work; with channels-redis every process publishes.

Publishing never fails the code that made the change: a layer that is down (Redis
stopped, unreachable) drops the messages, within :data:`PUBLISH_TIMEOUT`, and the
outage is logged once (:mod:`django_weft.live.layer_health`). Sockets resynchronise with a
fresh snapshot when the layer is back (see :mod:`django_weft.sockets.consumers`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import uuid
from functools import partial
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer
from django.db import DatabaseError, transaction

from django_weft.live import projections
from django_weft.live.changes import Changes
from django_weft.live.layer_health import LayerOutage, layer_call
from django_weft.models import Document, Run

logger = logging.getLogger("django_weft.live")

#: Sockets of operators (``view_run``): every run in full.
OPERATORS = "weft.runs.operators"
#: Sockets of everyone else: every run in the guest view.
GUESTS = "weft.runs.guests"

Message = tuple[str, dict[str, Any]]

#: A publish takes milliseconds; one that takes longer is given up, so that an
#: unreachable layer (a Redis whose packets vanish) delays the code that made the change
#: by at most this many seconds.
PUBLISH_TIMEOUT = 2.0

_home_loop: asyncio.AbstractEventLoop | None = None


#: Publishing from this process, whatever thread or loop it happens on.
publishing = LayerOutage("publishing")


def owner_group(user_id: object) -> str:
    """Sockets of one user: that user's own runs in full."""
    return f"weft.runs.user.{user_id}"


def document_group(key: str) -> str:
    """Sockets watching the document ``key`` (hashed: group names are ASCII and short)."""
    return f"weft.doc.{hashlib.sha256(key.encode()).hexdigest()[:40]}"


def set_home_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Record the event loop the sockets of this process run on.

    Publishing from other threads hands the send to this loop, which is what the
    in-memory layer needs (its queues belong to one loop).
    """
    global _home_loop
    _home_loop = loop


def publish(changes: Changes) -> None:
    """Publish what ``changes`` names once the current transaction commits (or now).

    Every run and document is read again at that moment, so watchers get the rows as
    they are stored, whatever the step that noted them went on to do.
    """
    if changes:
        transaction.on_commit(partial(_publish, list(changes.runs), list(changes.documents)))


def _listening_layer() -> BaseChannelLayer | None:
    layer = get_channel_layer()
    if layer is None:
        return None
    if isinstance(layer, InMemoryChannelLayer) and (_home_loop is None or _home_loop.is_closed()):
        return None  # nobody in this process can hear an in-memory layer (any more)
    return layer


def _publish(run_ids: list[uuid.UUID], document_ids: list[int]) -> None:
    """Read the rows and send their views; never raises into the code that made them.

    The change has committed whatever happens here: a database that fails right after
    (a restart) or a layer that is down costs the watchers this message, not the caller
    its work; a socket's next snapshot has the rows as they are.
    """
    try:
        _publish_rows(run_ids, document_ids)
    except DatabaseError as error:
        logger.debug("could not read what to publish: %s", error)
    except Exception:
        logger.exception("could not publish a change to the live views")


def _publish_rows(run_ids: list[uuid.UUID], document_ids: list[int]) -> None:
    if _listening_layer() is None:
        return
    messages: list[Message] = []
    if run_ids:
        runs = Run.objects.select_related("owner", "state", "schedule").filter(pk__in=run_ids)
        for run in runs:
            messages += _run_messages(run)
    if document_ids:
        messages += _document_messages(list(Document.objects.filter(pk__in=document_ids)))
    if messages:
        _send(messages)


def _run_messages(run: Run) -> list[Message]:
    full, guest = projections.run_views(run)
    messages: list[Message] = [
        (OPERATORS, {"type": "weft.run.full", "run": full}),
        (GUESTS, {"type": "weft.run.guest", "run": guest, "owner_id": run.owner_id}),
    ]
    if run.owner_id is not None:
        messages.append((owner_group(run.owner_id), {"type": "weft.run.full", "run": full}))
    return messages


def _document_messages(documents: list[Document]) -> list[Message]:
    """Application documents to their watchers; run state to the run's full watchers."""
    messages: list[Message] = []
    states = [document for document in documents if document.key.startswith("run:")]
    owners = {
        state_id: (run_id, owner_id)
        for run_id, owner_id, state_id in Run.objects.filter(state__in=states).values_list(
            "pk", "owner_id", "state_id"
        )
    }
    for document in documents:
        if not document.key.startswith("run:"):
            event = {"type": "weft.document", "document": projections.document(document)}
            messages.append((document_group(document.key), event))
            continue
        if document.pk not in owners:
            continue
        run_id, owner_id = owners[document.pk]
        event = {"type": "weft.state", **projections.state(document, run_id)}
        messages.append((OPERATORS, event))
        if owner_id is not None:
            messages.append((owner_group(owner_id), event))
    return messages


def _send(messages: list[Message]) -> None:
    layer = _listening_layer()
    if layer is None:
        return
    loop = _home_loop
    if loop is not None and loop.is_running():
        future = asyncio.run_coroutine_threadsafe(_send_all(layer, messages), loop)
        future.add_done_callback(_record_outcome)
        return
    try:
        async_to_sync(_send_all)(layer, messages)
    except Exception as error:
        publishing.failed(error)
    else:
        publishing.succeeded()


async def _send_all(layer: BaseChannelLayer, messages: list[Message]) -> None:
    async with asyncio.timeout(PUBLISH_TIMEOUT):
        # Side by side: an empty operators group must not hold up the guests' send.
        await asyncio.gather(*(_group_send(layer, group, message) for group, message in messages))


async def _group_send(layer: BaseChannelLayer, group: str, message: dict[str, Any]) -> None:
    # Tried again at once: a pooled connection that a restarted Redis closed fails once.
    error = await layer_call(layer.group_send, group, message)
    if error is not None:
        raise error


def _record_outcome(future: concurrent.futures.Future[None]) -> None:
    if future.cancelled():
        return
    error = future.exception()
    if error is None:
        publishing.succeeded()
    else:
        publishing.failed(error)

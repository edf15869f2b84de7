"""Publishing changes to the live sockets, after the transaction that made them commits.

Every change to a run (started, claimed, finished, abort requested), to a run's state
document and to an application document is sent to channel-layer groups with
``transaction.on_commit``, from whichever process made it: the web process, ``runjobs``
or a shell. Both views of a run are computed here, once per change: operators and the
run's owner get the full view, every other watcher the same guest view.

With the in-memory layer only sockets in the same process can hear, so a process that
has no socket skips the work; with channels-redis every process publishes.

Publishing never fails the code that made the change: a layer that is down (Redis
stopped, unreachable) drops the messages, within :data:`PUBLISH_TIMEOUT`, and the
outage is logged once (:mod:`django_weft.layer_health`). Sockets resynchronise with a
fresh snapshot when the layer is back (see :mod:`django_weft.consumers`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import uuid
from functools import partial
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from django_weft.conf import weft_settings
from django_weft.layer_health import LayerOutage, layer_call
from django_weft.loading import import_setting

if TYPE_CHECKING:
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


def run_changed(run_id: uuid.UUID) -> None:
    """Publish the run's new views once the current transaction commits."""
    transaction.on_commit(partial(_publish_run, run_id))


def document_changed(document: Document) -> None:
    """Publish the document's new revision once the current transaction commits."""
    transaction.on_commit(
        partial(_publish_document, document.pk, document.key, document.revision, document.data)
    )


def document_access(user: Any, key: str) -> bool:
    """The default policy: users with ``django_weft.view_document`` watch any document."""
    return bool(user.is_authenticated and user.has_perm("django_weft.view_document"))


def may_watch_document(user: Any, key: str) -> bool:
    """Whether ``user`` may watch ``key``; run state comes with runs, never on its own."""
    if key.startswith("run:"):
        return False
    return bool(import_setting(weft_settings.DOCUMENT_ACCESS)(user, key))


def views_of(run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
    """The full and the guest view of a run, as plain JSON-ready dicts."""
    from django_weft.api.serializers import RunGuestSerializer, RunOwnerSerializer

    full: dict[str, Any] = plain(RunOwnerSerializer(run).data)
    guest: dict[str, Any] = plain(RunGuestSerializer(run).data)
    return full, guest


def plain(data: Any) -> Any:
    """Serializer output as plain JSON types, which every channel layer can carry."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def _listening_layer() -> BaseChannelLayer | None:
    layer = get_channel_layer()
    if layer is None:
        return None
    if isinstance(layer, InMemoryChannelLayer) and (_home_loop is None or _home_loop.is_closed()):
        return None  # nobody in this process can hear an in-memory layer (any more)
    return layer


def _publish_run(run_id: uuid.UUID) -> None:
    from django_weft.models import Run

    if _listening_layer() is None:
        return
    run = Run.objects.select_related("owner", "state", "schedule").filter(pk=run_id).first()
    if run is None:
        return
    full, guest = views_of(run)
    messages: list[Message] = [
        (OPERATORS, {"type": "weft.run.full", "run": full}),
        (GUESTS, {"type": "weft.run.guest", "run": guest, "owner_id": run.owner_id}),
    ]
    if run.owner_id is not None:
        messages.append((owner_group(run.owner_id), {"type": "weft.run.full", "run": full}))
    _send(messages)


def _publish_document(document_id: int, key: str, revision: int, data: dict[str, Any]) -> None:
    from django_weft.models import Run

    if _listening_layer() is None:
        return
    payload = plain({"key": key, "revision": revision, "data": data})
    if not key.startswith("run:"):
        _send([(document_group(key), {"type": "weft.document", "document": payload})])
        return
    owner = Run.objects.filter(state_id=document_id).values_list("pk", "owner_id").first()
    if owner is None:
        return
    run_id, owner_id = owner
    event = {
        "type": "weft.state",
        "run": str(run_id),
        "revision": revision,
        "state": payload["data"],
    }
    messages: list[Message] = [(OPERATORS, event)]
    if owner_id is not None:
        messages.append((owner_group(owner_id), event))
    _send(messages)


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

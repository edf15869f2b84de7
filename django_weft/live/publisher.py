"""Publishing changes to the live sockets, after the transaction that made them commits.

Every change to a run (started, claimed, finished, abort requested), to a run's state
document and to an application document is published once its transaction commits,
from whichever process made it: the web process, ``runjobs`` or a shell. The layer that
made a change hands its :class:`~django_weft.live.changes.Changes` to :func:`publish`,
which after the commit only hands the ids to this process's publishing thread
(:mod:`django_weft.live.outbox`): a start, a claim or a finish never waits for the
channel layer, nor for the rows to be read again.

The thread publishes in rounds. Each round reads every run and document handed over
since the last one, as they are stored then (a run changed several times meanwhile is
read and sent once: its latest state), computes both views of each run
(:mod:`django_weft.live.projections`) once for all its watchers, and sends them in a
few messages: up to :data:`RUNS_PER_MESSAGE` runs in one message per group, not one
per run, so a socket's channel (which holds 100 messages on channels-redis) does not
overflow in a burst. Frames of one run can still come out of order (another process
publishes the same run as it read it), so each run view carries the run's ``version``
and a client keeps the highest.

With the in-memory layer only sockets in the same process can hear, so a process that
has no socket skips the work, and the round's sends run on the sockets' loop; with
channels-redis every process publishes, on the thread's own loop and connections.

Publishing never fails the code that made the change: a layer that is down (Redis
stopped, unreachable) drops the round's messages, within :data:`PUBLISH_TIMEOUT`, and
the outage is logged once (:mod:`django_weft.live.layer_health`). Sockets resynchronise
with a fresh snapshot when the layer is back (see :mod:`django_weft.sockets.consumers`).
At exit the process publishes what is pending for :data:`EXIT_TIMEOUT` seconds at most;
:func:`flush` waits for what is pending (tests).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import hashlib
import inspect
import logging
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer
from django.db import DatabaseError, transaction

from django_weft.live import projections
from django_weft.live.changes import Changes
from django_weft.live.layer_health import LayerOutage, layer_call
from django_weft.live.outbox import Outbox, after_fork
from django_weft.models import Document, Run

logger = logging.getLogger("django_weft.live")

#: Sockets of operators (``view_run``): every run in full.
OPERATORS = "weft.runs.operators"
#: Sockets of everyone else: every run in the guest view.
GUESTS = "weft.runs.guests"

Message = tuple[str, dict[str, Any]]
_Item = TypeVar("_Item")

#: A round's sends take milliseconds; a round that takes longer is given up, so that an
#: unreachable layer (a Redis whose packets vanish) holds the publishing thread (never
#: the code that made the change) for at most this many seconds.
PUBLISH_TIMEOUT = 2.0
#: Runs in one message to a group: a burst of changes costs a socket a few messages.
RUNS_PER_MESSAGE = 100
#: Rows read by one query of a round.
ROWS_PER_READ = 500
#: How long a process that exits goes on publishing what is pending.
EXIT_TIMEOUT = 5.0

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

    The in-memory layer's queues belong to that loop, so rounds send on it.
    """
    global _home_loop
    _home_loop = loop


def publish(changes: Changes) -> None:
    """Publish what ``changes`` names once the current transaction commits (or now).

    Every run and document is read again by the publishing thread, so watchers get the
    rows as they are stored, whatever the step that noted them went on to do.
    """
    if changes:
        transaction.on_commit(partial(_hand_over, list(changes.runs), list(changes.documents)))


def flush(timeout: float = 30.0) -> bool:
    """Wait until every change committed so far in this process was published.

    Published means sent to the channel layer, or given up (a layer that is down). For
    tests that look at what watchers received; False if ``timeout`` seconds passed.
    """
    return outbox.flush(timeout)


def stop(timeout: float = EXIT_TIMEOUT) -> bool:
    """Publish what is pending (``timeout`` seconds at most), then end the thread.

    Called at exit; a later change starts the thread again. False if it was still busy.
    """
    return outbox.stop(timeout)


def _hand_over(run_ids: list[uuid.UUID], document_ids: list[int]) -> None:
    if _listening_layer() is not None:
        outbox.hand_over(run_ids, document_ids)


def _listening_layer() -> BaseChannelLayer | None:
    layer = get_channel_layer()
    if layer is None:
        return None
    if isinstance(layer, InMemoryChannelLayer) and (_home_loop is None or _home_loop.is_closed()):
        return None  # nobody in this process can hear an in-memory layer (any more)
    return layer


def _deliver(
    run_ids: list[uuid.UUID], document_ids: list[int], loop: asyncio.AbstractEventLoop
) -> None:
    """One round: read the rows and send their views, giving up quietly on a failure.

    The changes have committed whatever happens here: a database that fails right
    after (a restart) or a layer that is down costs the watchers this round, not the
    callers their work; a socket's next snapshot has the rows as they are.
    """
    layer = _listening_layer()
    if layer is None:
        return
    try:
        messages = _messages(run_ids, document_ids)
    except DatabaseError as error:
        logger.debug("could not read what to publish: %s", error)
        return
    if messages:
        _send(layer, messages, loop)


def _messages(run_ids: list[uuid.UUID], document_ids: list[int]) -> list[Message]:
    runs = [
        run
        for chunk in _chunks(run_ids, ROWS_PER_READ)
        for run in Run.objects.select_related("owner", "state", "schedule").filter(pk__in=chunk)
    ]
    documents = [
        document
        for chunk in _chunks(document_ids, ROWS_PER_READ)
        for document in Document.objects.filter(pk__in=chunk)
    ]
    return _run_messages(runs) + _document_messages(documents)


def _run_messages(runs: list[Run]) -> list[Message]:
    full_views: list[dict[str, Any]] = []
    guest_views: list[dict[str, Any]] = []
    owners: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        full, guest = projections.run_views(run)
        full_views.append(full)
        guest_views.append({"run": guest, "owner_id": run.owner_id})
        if run.owner_id is not None:
            owners[run.owner_id].append(full)
    messages = [(OPERATORS, {"type": "weft.runs", "runs": chunk}) for chunk in _chunks(full_views)]
    messages += [
        (GUESTS, {"type": "weft.runs.guest", "runs": chunk}) for chunk in _chunks(guest_views)
    ]
    for owner_id, views in owners.items():
        messages += [
            (owner_group(owner_id), {"type": "weft.runs", "runs": chunk})
            for chunk in _chunks(views)
        ]
    return messages


def _document_messages(documents: list[Document]) -> list[Message]:
    """Application documents to their watchers; run state to the run's full watchers.

    Every change of a run's state is a ``state`` frame, as docs/live.md promises, also
    when the run changed in the same round (its ``run`` frame, sent first, carries the
    state too): a client that follows output by ``state`` frames alone misses none.
    """
    messages: list[Message] = []
    states = [document for document in documents if document.key.startswith("run:")]
    owners = {
        state_id: (run_id, owner_id)
        for run_id, owner_id, state_id in Run.objects.filter(state__in=states).values_list(
            "pk", "owner_id", "state_id"
        )
    }
    full: list[dict[str, Any]] = []
    of_owner: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    for document in documents:
        if not document.key.startswith("run:"):
            event = {"type": "weft.document", "document": projections.document(document)}
            messages.append((document_group(document.key), event))
        elif document.pk in owners:
            run_id, owner_id = owners[document.pk]
            state = projections.state(document, run_id)
            full.append(state)
            if owner_id is not None:
                of_owner[owner_id].append(state)
    messages += [(OPERATORS, {"type": "weft.states", "states": chunk}) for chunk in _chunks(full)]
    for owner_id, owned in of_owner.items():
        messages += [
            (owner_group(owner_id), {"type": "weft.states", "states": chunk})
            for chunk in _chunks(owned)
        ]
    return messages


def _chunks(items: Sequence[_Item], size: int = RUNS_PER_MESSAGE) -> Iterator[list[_Item]]:
    # itertools.batched is Python 3.12's.
    for first in range(0, len(items), size):
        yield list(items[first : first + size])


def _send(
    layer: BaseChannelLayer, messages: list[Message], loop: asyncio.AbstractEventLoop
) -> None:
    """Send a round's messages, and note whether the layer worked."""
    try:
        if isinstance(layer, InMemoryChannelLayer):
            _send_on_home_loop(layer, messages)
        else:
            loop.run_until_complete(_send_all(layer, messages))
    except Exception as error:
        publishing.failed(error)
    else:
        publishing.succeeded()


def _send_on_home_loop(layer: BaseChannelLayer, messages: list[Message]) -> None:
    home = _home_loop
    if home is None or not home.is_running():
        return  # the sockets' loop ended meanwhile: nobody hears this layer
    sending = _send_all(layer, messages)
    try:
        future = asyncio.run_coroutine_threadsafe(sending, home)
    except RuntimeError:
        # The loop closed since it was seen running: nobody hears this layer, and the
        # send that will never start is closed rather than left to warn when collected.
        sending.close()
        return
    try:
        # The send gives up after PUBLISH_TIMEOUT on the loop; a loop too busy to start
        # it is waited for as long again.
        future.result(2 * PUBLISH_TIMEOUT)
    except concurrent.futures.TimeoutError:
        future.cancel()
        if inspect.getcoroutinestate(sending) == inspect.CORO_CREATED:
            sending.close()  # the loop never started it (it stopped meanwhile)
        raise


async def _send_all(layer: BaseChannelLayer, messages: list[Message]) -> None:
    # One after the other, in the order read: one connection, and each socket gets a
    # round's messages in order.
    async with asyncio.timeout(PUBLISH_TIMEOUT):
        for group, message in messages:
            # Tried again at once: a pooled connection that a restarted Redis closed
            # fails once.
            error = await layer_call(layer.group_send, group, message)
            if error is not None:
                raise error


#: This process's publishing thread.
outbox = Outbox(_deliver)
after_fork(outbox)
atexit.register(stop)

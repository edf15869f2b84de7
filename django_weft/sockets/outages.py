"""A socket that stays open when the channel layer fails, and catches up once it is back.

When Redis restarts or goes away, :class:`OutageProofConsumer` tells the client
``{"type": "live", "ok": false}`` and waits while
:class:`~django_weft.live.layer_health.LayerWatch` probes the layer. Once it is back, the
socket re-joins its groups (a restarted Redis forgot them), says
``{"type": "live", "ok": true}`` and :meth:`~OutageProofConsumer.catch_up`\\ s: changes
were missed meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from django_weft.live.layer_health import LayerWatch, layer_call, raise_if_cancelling, watch_of

logger = logging.getLogger("django_weft.live")

#: The close code of a socket that could not resynchronise after an outage (its
#: snapshot could not be read): the client should reconnect, as for a server restart.
CLOSE_RESYNC_FAILED = 4503


class OutageProofConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """A JSON socket whose group memberships outlive channel-layer outages.

    ``groups_joined`` are the groups the socket belongs to, kept through an outage and
    joined again after it. A subclass sets ``ready`` once the client has its first
    snapshot, and says in :meth:`catch_up` what to resend after an outage.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.groups_joined: list[str] = []
        #: Whether the client was last told that changes reach it (``live`` frames).
        self.live_ok = True
        #: Set once the socket is closed from this end: nothing more is sent to it.
        self.closing = False
        self.ready = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._resyncing: asyncio.Task[None] | None = None
        self._watch: LayerWatch | None = None

    async def catch_up(self) -> None:
        """Resend what the client missed while the layer was down."""
        raise NotImplementedError

    async def send_json(self, content: dict[str, Any], close: bool = False) -> None:
        """Send ``content``, unless the socket is closing."""
        if not self.closing:
            await super().send_json(content, close)

    async def close(self, code: int | None = None, reason: str | None = None) -> None:
        """Close the socket once; whatever would be sent afterwards is dropped."""
        if not self.closing:
            self.closing = True
            await super().close(code=code, reason=reason)

    # channels' ``__call__`` stores the layer's receive in ``channel_receive`` and then
    # awaits what it reads back from it: reading back the receive that survives outages
    # keeps the socket open when the layer fails.
    @property
    def channel_receive(self) -> Callable[[], Awaitable[dict[str, Any]]]:
        return self._receive_through_outages

    @channel_receive.setter
    def channel_receive(self, receive: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        self._layer_receive = receive

    @property
    def watch(self) -> LayerWatch:
        if self._watch is None:
            self._watch = watch_of(self.channel_layer)
        return self._watch

    async def _receive_through_outages(self) -> dict[str, Any]:
        """The next layer event for this socket; a failing layer is waited out."""
        while True:
            await self.watch.back.wait()
            try:
                event: dict[str, Any] = await self._layer_receive()
            except Exception as error:
                raise_if_cancelling()
                self.watch.lost(error)
            else:
                return event

    async def join(self, groups: list[str]) -> bool:
        """Add this socket to ``groups``; False (and the watch told) if the layer failed."""
        if self.watch.down:
            self.layer_down()  # a socket that followed after the outage began
            return False
        for group in groups:
            error = await layer_call(self.channel_layer.group_add, group, self.channel_name)
            if error is not None:
                self.watch.lost(error)
                return False
        return True

    async def leave(self) -> None:
        """Stop following the layer and leave every group (the socket is closing)."""
        self.watch.unfollow(self)
        for task in list(self._tasks):
            task.cancel()
        if self.watch.down:
            return  # nothing to leave: the layer forgets these groups or expires them
        for group in self.groups_joined:
            error = await layer_call(self.channel_layer.group_discard, group, self.channel_name)
            if error is not None:
                logger.debug("could not leave %s on disconnect: %s", group, error)
                return

    def layer_down(self) -> None:
        if not self.live_ok:
            return
        self.live_ok = False
        if self.ready.is_set():
            self._spawn(self.send_json({"type": "live", "ok": False}))
        # Before that, the subclass says it right after the first snapshot.

    def layer_back(self, delay: float) -> None:
        if self._resyncing is not None:
            self._resyncing.cancel()  # one from an earlier return, still waiting its turn
        self._resyncing = self._spawn(self._resync(delay))

    async def _resync(self, delay: float) -> None:
        """Re-join every group and catch up: the changes missed are in what it resends."""
        await self.ready.wait()
        await asyncio.sleep(delay)
        if not await self.join(self.groups_joined):
            return  # down again: the next layer_back() tries again
        try:
            if not self.live_ok:
                self.live_ok = True
                await self.send_json({"type": "live", "ok": True})
            await self.catch_up()
        except Exception:
            logger.exception("could not resend the snapshot after a channel-layer outage")
            await self.close(code=CLOSE_RESYNC_FAILED)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task is self._resyncing:
            self._resyncing = None
        if not task.cancelled() and task.exception() is not None:
            # A send to a client that has just gone: its disconnect is on its way.
            logger.debug("a live socket task failed", exc_info=task.exception())

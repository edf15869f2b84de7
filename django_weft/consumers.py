"""The live socket: a snapshot of the runs a user may see, then every change.

Frames are JSON objects with a ``type``; see docs/live.md for the protocol. A client
may ``start`` a run (with a ``request_id`` that makes a resent request return the same
run), ``abort`` one, and ``subscribe`` to application documents. Whatever a client
sends, a bad frame gets an ``error`` frame naming the problem and the socket stays
open; nothing is written for a refused request.

The socket also stays open when the channel layer fails (Redis restarts or goes away):
the client gets ``{"type": "live", "ok": false}``, the sockets of this process wait
while :class:`~django_weft.layer_health.LayerWatch` probes the layer, and once it is
back each re-joins its groups (a restarted Redis forgot them) and sends
``{"type": "live", "ok": true}`` and a fresh ``snapshot``: changes were missed meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from rest_framework import serializers

from django_weft import access, live
from django_weft.api.serializers import RunViewSerializer
from django_weft.conf import weft_settings
from django_weft.exceptions import (
    ConcurrencyLimitReached,
    IdempotencyKeyReused,
    InvalidArgs,
    UnknownJob,
)
from django_weft.jobs import flatten_errors, registry
from django_weft.layer_health import LayerWatch, layer_call, raise_if_cancelling, watch_of
from django_weft.models import Document, Run
from django_weft.models.run import UNFINISHED
from django_weft.runs import abort, start

logger = logging.getLogger("django_weft.live")

#: The close code of a socket that could not resynchronise after an outage (its
#: snapshot could not be read): the client should reconnect, as for a server restart.
CLOSE_RESYNC_FAILED = 4503


class StartFrame(serializers.Serializer[Any]):
    job = serializers.CharField(max_length=200)
    args = serializers.DictField(required=False, default=dict)
    request_id = serializers.CharField(max_length=150)


class AbortFrame(serializers.Serializer[Any]):
    run = serializers.UUIDField()
    request_id = serializers.CharField(max_length=150, required=False)


class SubscribeFrame(serializers.Serializer[Any]):
    documents = serializers.ListField(
        child=serializers.CharField(max_length=255), allow_empty=False, max_length=50
    )


class FrameError(Exception):
    """A request the socket refuses: becomes an ``error`` frame."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


class RunsConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """``ws/weft/runs/``: runs as their owner or a guest sees them, live."""

    frames = {"start": StartFrame, "abort": AbortFrame, "subscribe": SubscribeFrame}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.groups_joined: list[str] = []
        self.documents_watched: list[str] = []
        #: Whether the client was last told that changes reach it (``live`` frames).
        self.live_ok = True
        self._ready = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._resyncing: asyncio.Task[None] | None = None
        self._watch: LayerWatch | None = None

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

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Forward layer events straight away.

        channels' dispatch first closes stale database connections through the one
        sync thread, per message and per socket; these handlers never touch the
        database, and with many sockets that hop was most of the fan-out time.
        """
        if message["type"].startswith("weft."):
            await getattr(self, get_handler_name(message))(message)
            return
        await super().dispatch(message)

    async def connect(self) -> None:
        user: Any = self.scope.get("user") or AnonymousUser()
        if not user.is_authenticated and not weft_settings.LIVE_ALLOW_ANONYMOUS:
            # Accept, then close: a refused handshake reaches a browser as a bare
            # failure, a close code says why.
            await self.accept()
            await self.close(code=4403)
            return
        live.set_home_loop(asyncio.get_running_loop())
        self.user = user
        self.operator, self.can_start = await database_sync_to_async(self._permissions)()
        self.groups_joined = [live.OPERATORS] if self.operator else [live.GUESTS]
        if user.is_authenticated and not self.operator:
            self.groups_joined.append(live.owner_group(user.pk))
        # Followed before joining, so that an outage ending meanwhile is not missed.
        self.watch.follow(self)
        await self._join(self.groups_joined)
        await self.accept()
        await self._send_snapshot()
        if not self.live_ok:
            await self.send_json({"type": "live", "ok": False})
        self._ready.set()

    async def disconnect(self, code: int) -> None:
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

    # -- the channel layer, through outages -----------------------------------------------

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

    async def _join(self, groups: list[str]) -> bool:
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

    def layer_down(self) -> None:
        if not self.live_ok:
            return
        self.live_ok = False
        if self._ready.is_set():
            self._spawn(self.send_json({"type": "live", "ok": False}))
        # Before that, connect() says it right after the snapshot.

    def layer_back(self, delay: float) -> None:
        if self._resyncing is not None:
            self._resyncing.cancel()  # one from an earlier return, still waiting its turn
        self._resyncing = self._spawn(self._resync(delay))

    async def _resync(self, delay: float) -> None:
        """Re-join every group and resend the snapshot: the changes missed are in it."""
        await self._ready.wait()
        await asyncio.sleep(delay)
        if not await self._join(self.groups_joined):
            return  # down again: the next layer_back() tries again
        try:
            if not self.live_ok:
                self.live_ok = True
                await self.send_json({"type": "live", "ok": True})
            await self._send_snapshot()
            if self.documents_watched:
                await self.handle_subscribe({"documents": self.documents_watched})
        except FrameError as error:
            await self.send_json({"type": "error", "code": error.code, "message": str(error)})
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

    async def _send_snapshot(self) -> None:
        runs = await database_sync_to_async(self._snapshot)()
        await self.send_json(
            {
                "type": "snapshot",
                "user": self.user.get_username() if self.user.is_authenticated else None,
                "can_start": self.can_start,
                "operator": self.operator,
                "runs": runs,
            }
        )

    # -- frames from the client ---------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        request_id = None
        try:
            frame = self._parse(text_data, bytes_data)
            request_id = (
                frame.get("request_id") if isinstance(frame.get("request_id"), str) else None
            )
            kind = frame.get("type")
            if not isinstance(kind, str) or kind not in self.frames:
                known = ", ".join(sorted(self.frames))
                raise FrameError(
                    "unknown_type", f"unknown frame type {kind!r}; expected one of: {known}"
                )
            fields = self.frames[kind](data={k: v for k, v in frame.items() if k != "type"})
            if not fields.is_valid():
                raise FrameError(
                    "invalid", f"invalid {kind} frame", fields=flatten_errors(fields.errors)
                )
            await getattr(self, f"handle_{kind}")(fields.validated_data)
        except FrameError as error:
            await self.send_json(
                {
                    "type": "error",
                    "code": error.code,
                    "message": str(error),
                    "request_id": request_id,
                }
                | error.details
            )

    @staticmethod
    def _parse(text_data: str | None, bytes_data: bytes | None) -> dict[str, Any]:
        if text_data is None:
            raise FrameError("malformed", "binary frames are not accepted; send JSON text")
        if len(text_data) > weft_settings.LIVE_MAX_FRAME:
            raise FrameError(
                "too_large",
                f"frame of {len(text_data)} characters is over the limit of "
                f"{weft_settings.LIVE_MAX_FRAME}",
            )
        try:
            frame = json.loads(text_data)
        except json.JSONDecodeError as error:
            raise FrameError("malformed", f"malformed JSON: {error}") from None
        if not isinstance(frame, dict):
            raise FrameError(
                "malformed", f"a frame must be a JSON object, not {type(frame).__name__}"
            )
        return frame

    async def handle_start(self, frame: dict[str, Any]) -> None:
        if not self.can_start:
            raise FrameError("forbidden", access.refusal("start runs", access.ADD_RUN))
        run = await database_sync_to_async(self._start)(frame)
        await self.send_json({"type": "started", "request_id": frame["request_id"], "run": run})

    async def handle_abort(self, frame: dict[str, Any]) -> None:
        await database_sync_to_async(self._abort)(frame["run"])
        await self.send_json(
            {
                "type": "abort_requested",
                "request_id": frame.get("request_id"),
                "run": str(frame["run"]),
            }
        )

    async def handle_subscribe(self, frame: dict[str, Any]) -> None:
        documents = await database_sync_to_async(self._documents)(frame["documents"])
        groups = [
            group
            for group in dict.fromkeys(live.document_group(key) for key in frame["documents"])
            if group not in self.groups_joined
        ]
        # Kept even if the layer is down now: they are joined again when it is back.
        self.groups_joined += groups
        self.documents_watched = list(dict.fromkeys([*self.documents_watched, *frame["documents"]]))
        await self._join(groups)
        for document in documents:
            await self.send_json({"type": "document", "document": document})

    # -- events from the channel layer ----------------------------------------------------------

    async def weft_run_full(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "run", "run": event["run"]})

    async def weft_run_guest(self, event: dict[str, Any]) -> None:
        if self.user.is_authenticated and event.get("owner_id") == self.user.pk:
            return  # this socket gets the full view through the owner's group
        await self.send_json({"type": "run", "run": event["run"]})

    async def weft_state(self, event: dict[str, Any]) -> None:
        await self.send_json(
            {
                "type": "state",
                "run": event["run"],
                "revision": event["revision"],
                "state": event["state"],
            }
        )

    async def weft_document(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "document", "document": event["document"]})

    # -- database work (in a thread) ------------------------------------------------------------

    def _permissions(self) -> tuple[bool, bool]:
        operator = self.user.is_authenticated and self.user.has_perm(access.VIEW_RUN)
        return operator, access.may_start_runs(self.user)

    def _view(self, run: Run) -> dict[str, Any]:
        return self._views([run])[0]

    def _views(self, runs: list[Run]) -> list[dict[str, Any]]:
        """Each run in the view this user gets, as the API would show it."""
        views: list[dict[str, Any]] = live.plain(
            RunViewSerializer(cast(Any, runs), many=True, context={"user": self.user}).data
        )
        return views

    def _snapshot(self) -> list[dict[str, Any]]:
        visible = Run.objects.select_related("owner", "state", "schedule")
        runs = list(visible.filter(status__in=UNFINISHED))
        recent = visible.exclude(status__in=UNFINISHED).order_by("-finished_at")
        runs += list(recent[: weft_settings.LIVE_RECENT_RUNS])
        return self._views(runs)

    def _start(self, frame: dict[str, Any]) -> dict[str, Any]:
        try:
            job = registry.get(frame["job"])
            run = start(
                job, frame["args"], key=f"{self.user.pk}:{frame['request_id']}", owner=self.user
            )
        except UnknownJob as error:
            raise FrameError("invalid", str(error), fields={"job": [str(error)]}) from None
        except InvalidArgs as error:
            raise FrameError(
                "invalid", str(error), fields={f"args.{k}": v for k, v in error.errors.items()}
            ) from None
        except ConcurrencyLimitReached as error:
            raise FrameError("concurrency_limit", str(error)) from None
        except IdempotencyKeyReused as error:
            raise FrameError("idempotency_key_reused", str(error)) from None
        return self._view(Run.objects.select_related("owner", "state", "schedule").get(pk=run.pk))

    def _abort(self, run_id: uuid.UUID) -> None:
        run = Run.objects.filter(pk=run_id).first()
        if run is None:
            raise FrameError("not_found", f"no run {run_id}")
        if not access.may_abort_run(self.user, run):
            refused = access.refusal(f"abort run {run_id}", access.CHANGE_RUN, or_owner=True)
            raise FrameError("forbidden", refused)
        if not abort(run):
            run.refresh_from_db(fields=["status"])
            if run.is_finished:
                raise FrameError("finished", f"run {run_id} has already finished ({run.status})")
            # Asked before and not finished yet: the request stands, as the API says.

    def _documents(self, keys: list[str]) -> list[dict[str, Any]]:
        refused = [key for key in keys if not live.may_watch_document(self.user, key)]
        if refused:
            raise FrameError("forbidden", f"you may not watch: {', '.join(refused)}")
        stored = {d.key: d for d in Document.objects.filter(key__in=keys)}
        # A document nobody wrote yet is announced empty (revision null, data null).
        return [
            {"key": key, "revision": d.revision, "data": d.data}
            if (d := stored.get(key)) is not None
            else {"key": key, "revision": None, "data": None}
            for key in dict.fromkeys(keys)
        ]

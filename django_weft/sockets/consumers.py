"""The live socket: a snapshot of the runs a user may see, then every change.

Frames are JSON objects with a ``type``; see docs/live.md for the protocol. A client
may ``start`` a run (with a ``request_id`` that makes a resent request return the same
run), ``abort`` one, and ``subscribe`` to application documents. Whatever a client
sends, a bad frame gets an ``error`` frame naming the problem and the socket stays
open; nothing is written for a refused request.

The socket also stays open when the channel layer fails (Redis restarts or goes away):
the client gets ``{"type": "live", "ok": false}``, the sockets of this process wait
while :class:`~django_weft.live.layer_health.LayerWatch` probes the layer, and once it is
back each re-joins its groups (a restarted Redis forgot them) and sends
``{"type": "live", "ok": true}`` and a fresh ``snapshot``: changes were missed meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.db import DatabaseError
from rest_framework import serializers

from django_weft import access, operations
from django_weft.api.serializers import RunStartSerializer
from django_weft.conf import weft_settings
from django_weft.jobs.registry import flatten_errors
from django_weft.live import projections, publisher
from django_weft.live.layer_health import LayerWatch, layer_call, raise_if_cancelling, watch_of
from django_weft.models import Document, Run
from django_weft.models.run import UNFINISHED
from django_weft.sockets.origins import origin_allowed

logger = logging.getLogger("django_weft.live")

#: The close code of a socket that could not resynchronise after an outage (its
#: snapshot could not be read): the client should reconnect, as for a server restart.
CLOSE_RESYNC_FAILED = 4503
#: The close code of a socket refused as it connects: signed out, or another site's page.
CLOSE_FORBIDDEN = 4403


class StartFrame(RunStartSerializer):
    """A start over the socket: the API's start, with the request id as its key."""

    request_id = serializers.CharField(max_length=150)


class AbortFrame(serializers.Serializer[Any]):
    run = serializers.UUIDField()
    request_id = serializers.CharField(max_length=150, required=False)


class SubscribeFrame(serializers.Serializer[Any]):
    documents = serializers.ListField(
        child=serializers.CharField(max_length=255), allow_empty=False, max_length=50
    )


class PageFrame(serializers.Serializer[Any]):
    """The next page of unfinished runs, after the run ``after`` (a snapshot's ``next``)."""

    after = serializers.UUIDField()
    request_id = serializers.CharField(max_length=150, required=False)


class FrameError(Exception):
    """A request the socket refuses: becomes an ``error`` frame."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


class RunsConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """``ws/weft/runs/``: runs as their owner or a guest sees them, live."""

    frames = {
        "start": StartFrame,
        "abort": AbortFrame,
        "subscribe": SubscribeFrame,
        "page": PageFrame,
    }

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
        if not origin_allowed(self.scope):
            # A page of another site, carrying the user's cookies: cross-site websocket
            # hijacking. Refused whatever the project's ASGI stack checks.
            await self.accept()
            await self.close(code=CLOSE_FORBIDDEN)
            return
        if not user.is_authenticated and not weft_settings.LIVE_ALLOW_ANONYMOUS:
            # Accept, then close: a refused handshake reaches a browser as a bare
            # failure, a close code says why.
            await self.accept()
            await self.close(code=CLOSE_FORBIDDEN)
            return
        publisher.set_home_loop(asyncio.get_running_loop())
        self.user = user
        self.operator, self.can_start = await database_sync_to_async(self._permissions)()
        self.groups_joined = [publisher.OPERATORS] if self.operator else [publisher.GUESTS]
        if user.is_authenticated and not self.operator:
            self.groups_joined.append(publisher.owner_group(user.pk))
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
        runs, following = await database_sync_to_async(self._snapshot)()
        await self.send_json(
            {
                "type": "snapshot",
                "user": self.user.get_username() if self.user.is_authenticated else None,
                "can_start": self.can_start,
                "operator": self.operator,
                "runs": runs,
                "truncated": following is not None,
                "next": following,
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
            await self._send_error(error, request_id)
        except DatabaseError as error:
            logger.warning("live socket request refused, the database is unavailable: %s", error)
            unavailable = FrameError("unavailable", "the database is unavailable; try again")
            await self._send_error(unavailable, request_id)
        except Exception:
            # Whatever a frame did, the socket stays open and the client is told.
            logger.exception("a live socket frame could not be handled")
            failed = FrameError("internal", "the request failed; it was logged")
            await self._send_error(failed, request_id)

    async def _send_error(self, error: FrameError, request_id: str | None) -> None:
        await self.send_json(
            {"type": "error", "code": error.code, "message": str(error), "request_id": request_id}
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
        except RecursionError:
            raise FrameError("malformed", "JSON nested too deeply") from None
        if not isinstance(frame, dict):
            raise FrameError(
                "malformed", f"a frame must be a JSON object, not {type(frame).__name__}"
            )
        return frame

    async def handle_start(self, frame: dict[str, Any]) -> None:
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

    async def handle_page(self, frame: dict[str, Any]) -> None:
        runs, following = await database_sync_to_async(self._page)(frame["after"])
        await self.send_json(
            {
                "type": "page",
                "request_id": frame.get("request_id"),
                "runs": runs,
                "truncated": following is not None,
                "next": following,
            }
        )

    async def handle_subscribe(self, frame: dict[str, Any]) -> None:
        keys = list(dict.fromkeys(frame["documents"]))
        watched = list(dict.fromkeys([*self.documents_watched, *keys]))
        limit = weft_settings.LIVE_MAX_SUBSCRIPTIONS
        if len(watched) > limit:
            raise FrameError(
                "too_many_subscriptions",
                f"a socket watches at most {limit} documents; this one would watch {len(watched)}",
            )
        frame = {"documents": keys}
        documents = await database_sync_to_async(self._documents)(frame["documents"])
        groups = [
            group
            for group in dict.fromkeys(publisher.document_group(key) for key in frame["documents"])
            if group not in self.groups_joined
        ]
        # Kept even if the layer is down now: they are joined again when it is back.
        self.groups_joined += groups
        self.documents_watched = watched
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
        """What the client is told it may do, to draw its buttons; each request is still
        decided by :mod:`django_weft.operations`."""
        operator = self.user.is_authenticated and self.user.has_perm(access.VIEW_RUN)
        return operator, access.may_start_runs(self.user)

    def _views(self, runs: list[Run]) -> list[dict[str, Any]]:
        return [projections.run_for(self.user, run) for run in runs]

    def _snapshot(self) -> tuple[list[dict[str, Any]], str | None]:
        """Unfinished runs (newest first, at most a page) and the most recent finished ones.

        Bounded whoever connects: a snapshot with more unfinished runs than a page says
        ``truncated`` and names the run the next page starts after.
        """
        unfinished, following = self._unfinished(None)
        recent = (
            _visible_runs()
            .exclude(status__in=UNFINISHED)
            .order_by("-finished_at")[: weft_settings.LIVE_RECENT_RUNS]
        )
        return self._views([*unfinished, *recent]), following

    def _page(self, after: uuid.UUID) -> tuple[list[dict[str, Any]], str | None]:
        runs, following = self._unfinished(after)
        return self._views(runs), following

    @staticmethod
    def _unfinished(after: uuid.UUID | None) -> tuple[list[Run], str | None]:
        queued = _visible_runs().filter(status__in=UNFINISHED).order_by("-created_at", "-pk")
        if after is not None:
            anchor = Run.objects.filter(pk=after).values_list("created_at", flat=True).first()
            if anchor is None:
                raise FrameError("not_found", f"no run {after}")
            queued = queued.filter(created_at__lte=anchor).exclude(created_at=anchor, pk__gte=after)
        size = weft_settings.LIVE_SNAPSHOT_LIMIT
        runs = list(queued[: size + 1])
        if len(runs) > size:
            return runs[:size], str(runs[size - 1].pk)
        return runs, None

    def _start(self, frame: dict[str, Any]) -> dict[str, Any]:
        with refusals():
            run, _ = operations.start_for(
                self.user, frame["job"], frame["args"], key=frame["request_id"]
            )
        return projections.run_for(self.user, _visible_runs().get(pk=run.pk))

    def _abort(self, run_id: uuid.UUID) -> None:
        run = Run.objects.filter(pk=run_id).first()
        if run is None:
            raise FrameError("not_found", f"no run {run_id}")
        with refusals():
            # Asked before and not finished yet: the request stands, as the API says.
            operations.abort_for(self.user, run)

    def _documents(self, keys: list[str]) -> list[dict[str, Any]]:
        refused = [key for key in keys if not access.may_watch_document(self.user, key)]
        if refused:
            raise FrameError("forbidden", f"you may not watch: {', '.join(refused)}")
        stored = {d.key: d for d in Document.objects.filter(key__in=keys)}
        # A document nobody wrote yet is announced empty (revision null, data null).
        return [
            projections.document(d)
            if (d := stored.get(key)) is not None
            else {"key": key, "revision": None, "data": None}
            for key in keys
        ]


def _visible_runs() -> Any:
    return Run.objects.select_related("owner", "state", "schedule")


@contextmanager
def refusals() -> Iterator[None]:
    """Turn what the service layer refuses into an ``error`` frame's code and fields."""
    try:
        yield
    except operations.REFUSALS as error:
        code, message, fields = operations.describe_refusal(error)
        raise FrameError(code, message, **({"fields": fields} if fields else {})) from None

"""The live socket: a snapshot of the runs a user may see, then every change.

Frames are JSON objects with a ``type``; see docs/live.md for the protocol. A client
may ``start`` a run (with a ``request_id`` that makes a resent request return the same
run), ``abort`` one, and ``subscribe`` to application documents. Whatever a client
sends, a bad frame gets an ``error`` frame naming the problem and the socket stays
open; nothing is written for a refused request.
"""

from __future__ import annotations

import asyncio
import json
import uuid
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
from django_weft.models import Document, Run
from django_weft.models.run import UNFINISHED
from django_weft.runs import abort, start


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
        for group in self.groups_joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        runs = await database_sync_to_async(self._snapshot)()
        await self.send_json(
            {
                "type": "snapshot",
                "user": user.get_username() if user.is_authenticated else None,
                "can_start": self.can_start,
                "operator": self.operator,
                "runs": runs,
            }
        )

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "groups_joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

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
        for key in frame["documents"]:
            await self.channel_layer.group_add(live.document_group(key), self.channel_name)
            self.groups_joined.append(live.document_group(key))
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

"""The live socket: a snapshot of the runs a user may see, then every change.

Frames are JSON objects with a ``type``; see docs/live.md for the protocol. A client
may ``start`` a run (with a ``request_id`` that makes a resent request return the same
run), ``abort`` one, send one a ``signal``, ask for the next ``page`` of unfinished runs
and ``subscribe`` to application documents. Whatever a client sends, a bad frame gets an
``error`` frame naming the problem (:mod:`django_weft.sockets.frames`) and the socket
stays open;
nothing is written for a refused request. What each frame reads and writes is in
:mod:`django_weft.sockets.actions`; how the socket lives through channel-layer outages,
in :mod:`django_weft.sockets.outages`. The socket's user is looked at again every
``WEFT_LIVE_RECHECK_INTERVAL`` seconds and before each frame: one who signed out, was
deactivated or lost what the socket's view needs is cut off
(:mod:`django_weft.sockets.revocation`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.db import DatabaseError, InterfaceError
from django.utils.translation import gettext as _

from django_weft.conf import weft_settings
from django_weft.live import publisher
from django_weft.sockets import actions, frames, revocation
from django_weft.sockets.frames import FrameError
from django_weft.sockets.origins import origin_allowed
from django_weft.sockets.outages import OutageProofConsumer
from django_weft.sockets.revocation import Revoked

logger = logging.getLogger("django_weft.live")

#: The close code of a socket refused as it connects: signed out, or another site's page.
CLOSE_FORBIDDEN = 4403
#: The close code of a socket whose user could not be looked at again (a bug, logged).
CLOSE_INTERNAL_ERROR = 1011


class RunsConsumer(OutageProofConsumer):
    """``ws/weft/runs/``: runs as their owner or a guest sees them, live."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.documents_watched: list[str] = []

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
        inactive = user.is_authenticated and not getattr(user, "is_active", True)
        if inactive or (not user.is_authenticated and not weft_settings.LIVE_ALLOW_ANONYMOUS):
            # Accept, then close: a refused handshake reaches a browser as a bare
            # failure, a close code says why. A deactivated user is refused too, whatever
            # middleware handed the socket its user.
            await self.accept()
            await self.close(code=CLOSE_FORBIDDEN)
            return
        publisher.set_home_loop(asyncio.get_running_loop())
        self.user = user
        self.standing = await database_sync_to_async(revocation.standing_of)(self.scope, user)
        self.operator, self.can_start = self.standing.operator, self.standing.can_start
        self.groups_joined = [publisher.OPERATORS] if self.operator else [publisher.GUESTS]
        if user.is_authenticated and not self.operator:
            self.groups_joined.append(publisher.owner_group(user.pk))
        # Followed before joining, so that an outage ending meanwhile is not missed.
        self.watch.follow(self)
        await self.join(self.groups_joined)
        await self.accept()
        await self._send_snapshot()
        if not self.live_ok:
            await self.send_json({"type": "live", "ok": False})
        self.ready.set()
        if user.is_authenticated:
            self._spawn(self._keep_checking())

    async def disconnect(self, code: int) -> None:
        await self.leave()

    async def catch_up(self) -> None:
        """After an outage: a fresh snapshot, and the documents watched as they are now."""
        try:
            await self._send_snapshot()
            if self.documents_watched:
                documents = await database_sync_to_async(actions.documents)(
                    self.user, self.documents_watched
                )
                for document in documents:
                    await self.send_json({"type": "document", "document": document})
        except FrameError as error:
            await self.send_json({"type": "error", "code": error.code, "message": str(error)})

    async def _send_snapshot(self) -> None:
        runs, following = await database_sync_to_async(actions.snapshot)(self.user)
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

    # -- whether the user still holds this socket's view ----------------------------------------

    async def _keep_checking(self) -> None:
        """Look at the user every ``WEFT_LIVE_RECHECK_INTERVAL`` seconds until one fails.

        The first look comes at a random moment within the interval, so that sockets
        that connected together (after a restart) are not all looked at together.
        """
        await asyncio.sleep(random.uniform(0, weft_settings.LIVE_RECHECK_INTERVAL))
        while True:
            try:
                if not await self._recheck():
                    return
            except (DatabaseError, InterfaceError) as error:
                # Nothing can be told without the database; the next look tries again.
                logger.warning("could not look at a live socket's user again: %s", error)
            except Exception:
                # A look that fails otherwise would fail every time: close rather than
                # serve a user nobody can vouch for.
                logger.exception("could not look at a live socket's user again; closing it")
                await self.close(code=CLOSE_INTERNAL_ERROR)
                return
            await asyncio.sleep(weft_settings.LIVE_RECHECK_INTERVAL)

    async def _recheck(self) -> bool:
        """Whether the user still holds this socket's view; if not, the socket is closed.

        The user read again replaces the one the socket had, so each frame is decided
        on permissions as they are now.
        """
        try:
            self.user = await database_sync_to_async(revocation.recheck)(
                self.standing, self.documents_watched
            )
        except Revoked as revoked:
            logger.info("live socket of user %s closed: %s", self.standing.user_id, revoked)
            await self.close(code=revoked.code, reason=revoked.reason)
            return False
        return True

    # -- frames from the client ---------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.closing:
            return
        request_id = None
        try:
            if not await self._recheck():
                return
            frame = frames.parse(text_data, bytes_data)
            request_id = frames.request_id(frame)
            kind, fields = frames.read(frame)
            await getattr(self, f"handle_{kind}")(fields)
        except FrameError as error:
            await self._send_error(error, request_id)
        except DatabaseError as error:
            logger.warning("live socket request refused, the database is unavailable: %s", error)
            unavailable = FrameError("unavailable", _("the database is unavailable; try again"))
            await self._send_error(unavailable, request_id)
        except Exception:
            # Whatever a frame did, the socket stays open and the client is told.
            logger.exception("a live socket frame could not be handled")
            failed = FrameError("internal", _("the request failed; it was logged"))
            await self._send_error(failed, request_id)

    async def _send_error(self, error: FrameError, request_id: str | None) -> None:
        await self.send_json(
            {"type": "error", "code": error.code, "message": str(error), "request_id": request_id}
            | error.details
        )

    async def handle_start(self, fields: dict[str, Any]) -> None:
        request_id, run = await database_sync_to_async(actions.start)(self.user, fields)
        await self.send_json({"type": "started", "request_id": request_id, "run": run})

    async def handle_abort(self, frame: dict[str, Any]) -> None:
        await database_sync_to_async(actions.abort)(self.user, frame["run"])
        await self.send_json(
            {
                "type": "abort_requested",
                "request_id": frame.get("request_id"),
                "run": str(frame["run"]),
            }
        )

    async def handle_signal(self, frame: dict[str, Any]) -> None:
        await database_sync_to_async(actions.signal)(
            self.user, frame["run"], frame["name"], frame["payload"]
        )
        await self.send_json(
            {"type": "signal_sent", "request_id": frame.get("request_id"), "run": str(frame["run"])}
        )

    async def handle_page(self, frame: dict[str, Any]) -> None:
        runs, following = await database_sync_to_async(actions.page)(self.user, frame["after"])
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
        # A document already watched is neither read nor sent again: its changes come.
        keys = [
            key for key in dict.fromkeys(frame["documents"]) if key not in self.documents_watched
        ]
        if not keys:
            return
        watched = [*self.documents_watched, *keys]
        limit = weft_settings.LIVE_MAX_SUBSCRIPTIONS
        if len(watched) > limit:
            raise FrameError(
                "too_many_subscriptions",
                f"a socket watches at most {limit} documents; this one would watch {len(watched)}",
            )
        documents = await database_sync_to_async(actions.documents)(self.user, keys)
        groups = [
            group
            for group in dict.fromkeys(publisher.document_group(key) for key in keys)
            if group not in self.groups_joined
        ]
        # Kept even if the layer is down now: they are joined again when it is back.
        self.groups_joined += groups
        self.documents_watched = watched
        await self.join(groups)
        for document in documents:
            await self.send_json({"type": "document", "document": document})

    # -- events from the channel layer ----------------------------------------------------------

    async def weft_runs(self, event: dict[str, Any]) -> None:
        """A round's runs in full (operators, or the runs' owner): one frame each."""
        for run in event["runs"]:
            await self.send_json({"type": "run", "run": run})

    async def weft_runs_guest(self, event: dict[str, Any]) -> None:
        owner = self.user.pk if self.user.is_authenticated else None
        for guest in event["runs"]:
            # This socket's own runs come in full through the owner's group.
            if owner is None or guest["owner_id"] != owner:
                await self.send_json({"type": "run", "run": guest["run"]})

    async def weft_states(self, event: dict[str, Any]) -> None:
        for state in event["states"]:
            await self.send_json(
                {
                    "type": "state",
                    "run": state["run"],
                    "revision": state["revision"],
                    "state": state["state"],
                }
            )

    async def weft_document(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "document", "document": event["document"]})

"""Whether an open socket's user still holds what the socket was opened with.

A socket may stay open for days, and what it receives was decided as it connected: the
operators' group gets every run in full, a user's own group their runs in full, a
document's group that document. So the consumer asks :func:`recheck` every
``WEFT_LIVE_RECHECK_INTERVAL`` seconds and before each frame its client sends, in the
database thread, and closes the socket when the answer is :class:`Revoked`:

- ``4401`` (:data:`CLOSE_SIGNED_OUT`): the user is gone, deactivated, or signed out
  (the session that signed them in was deleted, flushed, expired or signed in as
  someone else, or their password changed);
- ``4403`` (:data:`CLOSE_PERMISSION_LOST`): the user lost ``view_run`` (an operator's
  socket), or may no longer watch a document the socket watches.

A signed-out visitor's socket (``WEFT_LIVE_ALLOW_ANONYMOUS``) has nothing to lose.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.contrib.auth.models import AnonymousUser
from django.utils.crypto import constant_time_compare

from django_weft import access
from django_weft.access import User
from django_weft.sockets import actions

#: The close code of a socket whose user signed out, was deactivated or removed.
CLOSE_SIGNED_OUT = 4401
#: The close code of a socket whose user lost a permission its view needed.
CLOSE_PERMISSION_LOST = 4403


class Revoked(Exception):
    """The socket's user no longer holds what it was opened with: close it with ``code``."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class Standing:
    """Who a socket serves and what it was granted, as it connected."""

    #: The user's primary key as the session stores it; None for a signed-out visitor.
    user_id: str | None
    #: The session that signed the user in, or None when no session did (a project's
    #: own authentication middleware, a test's scope).
    session_key: str | None
    #: Whether the socket gets every run in full (``view_run``).
    operator: bool
    #: Whether the user could start runs: what the client is told, to draw its buttons.
    can_start: bool


def standing_of(scope: dict[str, Any], user: Any) -> Standing:
    """What the socket of ``scope`` serves ``user`` with; reads the session."""
    operator, can_start = actions.permissions(user)
    if not user.is_authenticated:
        return Standing(None, None, operator, can_start)
    user_id = user._meta.pk.value_to_string(user)
    session = scope.get("session")
    signed_in_by_session = session is not None and session.get(SESSION_KEY) == user_id
    session_key = session.session_key if session is not None and signed_in_by_session else None
    return Standing(user_id, session_key, operator, can_start)


def recheck(standing: Standing, documents: list[str]) -> User:
    """The socket's user as stored now; :class:`Revoked` if they lost what it needs.

    ``documents`` are the keys the socket watches. The user returned is a fresh copy
    (its permissions read again), for the frame about to be handled.
    """
    if standing.user_id is None:
        return AnonymousUser()
    user: User | None = _signed_in_user(standing.user_id, standing.session_key)
    if user is None:
        raise Revoked(CLOSE_SIGNED_OUT, "signed out, or the account was deactivated")
    operator, _ = actions.permissions(user)
    if standing.operator and not operator:
        raise Revoked(CLOSE_PERMISSION_LOST, f"{access.VIEW_RUN} was revoked")
    if any(not access.may_watch_document(user, key) for key in documents):
        raise Revoked(CLOSE_PERMISSION_LOST, "a document watched may no longer be watched")
    return user


def _signed_in_user(user_id: str, session_key: str | None) -> Any | None:
    """The user as stored now if still active and signed in; None otherwise."""
    if session_key is None:
        user = get_user_model()._default_manager.filter(pk=user_id).first()
        return user if user is not None and getattr(user, "is_active", True) else None
    return _session_user(session_key, user_id)


def _session_user(session_key: str, user_id: str) -> Any | None:
    """The user the session ``session_key`` still signs in, if it is ``user_id``.

    Django's ``auth.get_user`` read-only: it would flush a stale session or move it to a
    new key, which the browser's cookie would not follow; a socket only reads.
    """
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    backend_path = session.get(BACKEND_SESSION_KEY)
    if session.get(SESSION_KEY) != user_id or backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    model = get_user_model()
    user = load_backend(backend_path).get_user(model._meta.pk.to_python(user_id))
    if user is None or not hasattr(user, "get_session_auth_hash"):
        return user  # the backend refused them (inactive, removed), or has no password
    kept = session.get(HASH_SESSION_KEY) or ""
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return user if any(constant_time_compare(kept, known) for known in hashes) else None

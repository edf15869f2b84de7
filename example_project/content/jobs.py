"""The content site's jobs. What they do lands in one application document, the ledger.

The ledger is a :class:`~django_weft.models.Document` like any run's state: each job
changes it with one conditional update, so jobs running side by side never lose a count.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from django_weft import RunContext, change_document, job, open_document

LEDGER = "content:ledger"


def ledger_document() -> Any:
    return open_document(
        LEDGER,
        schema="content.ledger",
        initial=lambda: {"digests": 0, "cleanups": 0, "reminders": [], "reports": [], "dues": {}},
    )


def record(kind: str, ctx: RunContext, change: Any = None) -> None:
    """Count one run of ``kind`` in the ledger, with the due it was armed for."""

    def apply(data: dict[str, Any]) -> None:
        data["dues"].setdefault(kind, []).append(ctx.due.isoformat() if ctx.due else None)
        if change is not None:
            change(data)

    change_document(ledger_document(), apply)


@job("content.digest")
def digest(ctx: RunContext) -> None:
    """The nightly digest: one email per subscriber in a real site; a count here."""
    record("digest", ctx, lambda data: data.__setitem__("digests", data["digests"] + 1))


@job("content.cleanup")
def cleanup(ctx: RunContext) -> None:
    """The hourly cleanup of expired sessions and drafts."""
    record("cleanup", ctx, lambda data: data.__setitem__("cleanups", data["cleanups"] + 1))


class RemindArgs(serializers.Serializer[Any]):
    text = serializers.CharField(max_length=500)


@job("content.remind", args=RemindArgs)
def remind(ctx: RunContext, text: str) -> None:
    """A one-off reminder to the operator."""
    record("remind", ctx, lambda data: data["reminders"].append(text))

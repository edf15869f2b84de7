"""What a run looks like to its owner and to a guest: used by the API and the live sockets.

One definition of each view, so a socket frame and an API response never disagree. A
guest sees which runs exist and their phase: never their state (the output), result,
error or the args their job marks private.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from django_weft.jobs import registry
from django_weft.models import Run


class RunGuestSerializer(serializers.ModelSerializer[Run]):
    """A run as anyone allowed to watch sees it."""

    phase = serializers.CharField(read_only=True)
    args = serializers.SerializerMethodField()
    owner = serializers.SerializerMethodField()
    schedule: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="name", read_only=True
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "job",
            "phase",
            "status",
            "args",
            "owner",
            "schedule",
            "due",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_args(self, run: Run) -> dict[str, Any]:
        if run.job in registry:
            return registry.get(run.job).public_args(run.args)
        # A blocked run's args are not decoded, nor shown to guests.
        return {}

    def get_owner(self, run: Run) -> str | None:
        return run.owner.get_username() if run.owner is not None else None


class RunOwnerSerializer(RunGuestSerializer):
    """A run as its owner (or an operator) sees it: everything."""

    state = serializers.SerializerMethodField()
    state_revision = serializers.SerializerMethodField()
    abort_requested = serializers.SerializerMethodField()

    class Meta(RunGuestSerializer.Meta):
        fields = [
            *RunGuestSerializer.Meta.fields,
            "attempt",
            "idempotency_key",
            "abort_requested",
            "result",
            "error_type",
            "error_message",
            "state",
            "state_revision",
        ]
        read_only_fields = fields

    def get_args(self, run: Run) -> dict[str, Any]:
        args: dict[str, Any] = run.args
        return args

    def get_state(self, run: Run) -> dict[str, Any] | None:
        return run.state.data if run.state is not None else None

    def get_state_revision(self, run: Run) -> int | None:
        return run.state.revision if run.state is not None else None

    def get_abort_requested(self, run: Run) -> bool:
        return run.abort_requested_at is not None

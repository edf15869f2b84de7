"""What a stored module's page says beside its form: whether the sandbox can run modules
on this host, layer by layer, and the module's latest runs.

The layers are probed once per process (:func:`django_weft.sandbox.runner.host_layers`,
one child started) on the host that serves the page, which is not always a worker's:
the page says so. The runs listed are those the viewer sees in full (their own, or all
with ``view_run``), as the run list would show them.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from django_weft import access
from django_weft.access import User
from django_weft.conf import weft_settings
from django_weft.console.module_try import MODULE_JOB
from django_weft.models import Module, Run
from django_weft.sandbox import containment
from django_weft.sandbox.runner import host_layers

#: How many of a module's runs its page lists.
RECENT_RUNS = 10


@dataclass(frozen=True)
class LayerRow:
    """One sandbox layer as the page shows it."""

    name: str
    active: bool
    said: str


@dataclass(frozen=True)
class SandboxStatus:
    """The layers a module's child gets on this host, and what that means for its runs:
    ``problem`` is why modules cannot run here (empty when they can); ``uncontained``
    whether the unsafe setting lets them run anyway."""

    rows: list[LayerRow]
    problem: str
    uncontained: bool


def sandbox_status() -> SandboxStatus:
    """The sandbox's layers on this host, probed once per process."""
    report = host_layers(tuple(weft_settings.SANDBOX_LAYERS))
    uncontained = weft_settings.SANDBOX_UNSAFE_UNCONTAINED
    if isinstance(report, str):
        return SandboxStatus([], report, uncontained)
    rows = [
        LayerRow(
            name,
            bool(layer.get("active")),
            str(layer.get("detail") or layer.get("reason") or ""),
        )
        for name, layer in report.items()
    ]
    return SandboxStatus(rows, containment.describe(containment.missing(report)), uncontained)


def recent_runs(user: User, module: Module) -> QuerySet[Run]:
    """The module's newest runs that ``user`` sees in full."""
    runs = Run.objects.filter(job=MODULE_JOB, args__module=module.name)
    return access.runs_seen_in_full(user, runs).order_by("-created_at")[:RECENT_RUNS]

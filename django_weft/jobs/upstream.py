"""What a workflow's step reads of the steps it depends on: their outcomes and results."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async

from django_weft.models import Run, WorkflowStep


@dataclass(frozen=True)
class StepOutcome:
    """How a dependency ended: ``outcome`` is its run's status (``done``, ``failed``,
    ``aborted``, ``lost``); ``result`` its result when done; ``error`` its error message
    otherwise (a step that runs anyway reads why a dependency did not end done)."""

    outcome: str
    result: Any = None
    error: str = ""


class Upstream(Mapping[str, StepOutcome]):
    """``ctx.upstream``: the steps a workflow's step depends on, by name, each a
    :class:`StepOutcome` (``ctx.upstream["build"].result``). Empty for a run that is no
    workflow's step.

    Read from the database on first use, from each dependency's newest run (a retried
    dependency gives its retry's result). An ``async def`` job reads it with ``await
    ctx.upstream.aload()`` first, since the first use queries.
    """

    def __init__(self, run: Run) -> None:
        self._run = run
        self._found: dict[str, StepOutcome] | None = None

    def _outcomes(self) -> dict[str, StepOutcome]:
        if self._found is None:
            self._found = dependencies_of(self._run)
        return self._found

    async def aload(self) -> Upstream:
        await sync_to_async(self._outcomes)()
        return self

    def __getitem__(self, name: str) -> StepOutcome:
        return self._outcomes()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._outcomes())

    def __len__(self) -> int:
        return len(self._outcomes())


def dependencies_of(run: Run) -> dict[str, StepOutcome]:
    """The outcomes of the steps ``run``'s step depends on, by step name."""
    if run.workflow_id is None:
        return {}
    step = WorkflowStep.objects.filter(run=run).only("depends_on").first()
    if step is None or not step.depends_on:
        return {}
    found = WorkflowStep.objects.filter(
        workflow_id=run.workflow_id, name__in=step.depends_on
    ).select_related("run")
    return {
        dependency.name: StepOutcome(
            outcome=str(dependency.run.status),
            result=dependency.run.result,
            error=dependency.run.error_message,
        )
        for dependency in found
        if dependency.run is not None
    }

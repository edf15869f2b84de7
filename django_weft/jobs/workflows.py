"""Workflows defined in code: named graphs of steps, each a job, registered like jobs.

A definition is checked when it is made, so that a graph that could never run (a step
depending on a later or unknown one, a name used twice, a cycle) fails at import time,
naming the step, rather than when someone starts it::

    release = workflow(
        "release",
        steps=[
            Step("build", build),
            Step("unit", unit_tests, after=["build"]),
            Step("e2e", end_to_end, after=["build"]),
            Step("deploy", deploy, after=["unit", "e2e"]),
            Step("announce", announce, after=["deploy"], runs_anyway=True),
        ],
    )

A step's dependencies are named in ``after`` and must come earlier in the list, which is
therefore already an order in which the steps can start; a chain is a list where each
step is after the one before (:func:`chain`).

A step may be a group: with ``each``, its job runs once for each item ``each`` returns,
all at once, and the step ends when they all have (its result is theirs, in order)::

    Step("thumbnails", thumbnail, after=["scan"],
         each=lambda args, results: [{"photo": p} for p in results["scan"]["photos"]])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django_weft.jobs.registry import Job

#: What a step's name may be: it names the step in URLs and in the API's input.
STEP_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,99}$")

StepArgs = Mapping[str, Any] | Callable[[Mapping[str, Any]], Mapping[str, Any]] | None

#: A group step's items: a function of the workflow's args and the results of the steps
#: it depends on that ended done (by name), giving one member's args an item.
StepItems = Callable[[Mapping[str, Any], Mapping[str, Any]], Iterable[Mapping[str, Any]]]


@dataclass(frozen=True)
class Step:
    """A step: ``job`` run with ``args`` once every step named in ``after`` has ended.

    ``args`` is a mapping, or a function of the workflow's args that returns one; None
    (the default) gives the step the workflow's args as they are. A step whose
    dependency did not end ``done`` is cancelled, unless it ``runs_anyway``.

    With ``each`` (instead of ``args``) the step is a group: once its dependencies have
    ended, ``job`` runs once for each item of ``each(workflow_args, results)``, and the
    step ends when every member has: ``done`` with ``{"results": [...]}`` in the items'
    order when they all ended done, ``failed`` otherwise.
    """

    name: str
    job: Job
    after: Sequence[str] = ()
    args: StepArgs = None
    runs_anyway: bool = False
    each: StepItems | None = None

    def args_for(self, given: Mapping[str, Any]) -> Mapping[str, Any]:
        """This step's args in a workflow started with ``given``."""
        if self.args is None:
            return given
        if callable(self.args):
            return self.args(given)
        return self.args


@dataclass(frozen=True)
class WorkflowDefinition:
    """A registered workflow: see :func:`workflow`. ``on_end`` is a job started when the
    workflow ends (each time it ends: a retried step can end it again), with the
    workflow's id and outcome as its ``workflow`` and ``outcome`` args."""

    name: str
    steps: tuple[Step, ...]
    version: int = 1
    on_end: Job | None = None
    _by_name: dict[str, Step] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", check_steps(self.name, self.steps))

    def step(self, name: str) -> Step:
        return self._by_name[name]

    @property
    def shape(self) -> tuple[object, ...]:
        """What a second registration under this name must match: the graph and its jobs."""
        return (
            self.version,
            tuple(
                (s.name, s.job.name, tuple(s.after), s.runs_anyway, s.each is not None)
                for s in self.steps
            ),
        )


def check_steps(workflow_name: str, steps: Sequence[Step]) -> dict[str, Step]:
    """The steps by name, once each is known to be well formed; ``ValueError`` naming
    the first that is not (so that a bad graph fails when its module is imported)."""
    if not steps:
        raise ValueError(f"workflow {workflow_name!r} has no steps")
    seen: dict[str, Step] = {}
    for step in steps:
        where = f"workflow {workflow_name!r}, step {step.name!r}"
        if not isinstance(step.name, str) or not STEP_NAME.match(step.name):
            raise ValueError(
                f"{where}: a step's name is a letter or _, then up to 99 letters, digits, _ or -"
            )
        if step.name in seen:
            raise ValueError(f"{where}: the name is used twice")
        if isinstance(step.after, str):
            raise ValueError(f"{where}: after is a list of step names, not one string")
        for dependency in step.after:
            if dependency not in seen:
                raise ValueError(
                    f"{where}: after names {dependency!r}, which is not a step before it"
                )
        if len(set(step.after)) != len(step.after):
            raise ValueError(f"{where}: after names a step twice")
        if step.each is not None and (step.args is not None or not callable(step.each)):
            raise ValueError(
                f"{where}: each is a function giving the members' args, and takes no args"
            )
        seen[step.name] = step
    return seen


def chain(*jobs: Job) -> list[Step]:
    """The steps of a chain: each job after the one before, each step named after its
    job's position (``step1``, ``step2``, ...)."""
    return [
        Step(f"step{index}", job, after=[f"step{index - 1}"] if index > 1 else [])
        for index, job in enumerate(jobs, start=1)
    ]


class WorkflowRegistry:
    """The workflows the project defines, by name."""

    def __init__(self) -> None:
        self._workflows: dict[str, WorkflowDefinition] = {}

    def register(self, definition: WorkflowDefinition) -> WorkflowDefinition:
        known = self._workflows.get(definition.name)
        if known is not None and known.shape != definition.shape:
            raise ValueError(f"a workflow named {definition.name!r} is already registered")
        self._workflows[definition.name] = definition
        return definition

    def unregister(self, name: str) -> None:
        self._workflows.pop(name, None)

    def known(self, name: object) -> WorkflowDefinition | None:
        return self._workflows.get(name) if isinstance(name, str) else None

    def __iter__(self) -> Iterator[WorkflowDefinition]:
        return iter(sorted(self._workflows.values(), key=lambda definition: definition.name))


workflows = WorkflowRegistry()


def workflow(
    name: str, *, steps: Sequence[Step], version: int = 1, on_end: Job | None = None
) -> WorkflowDefinition:
    """Define and register the workflow ``name`` of ``steps`` (see :class:`Step`)."""
    return workflows.register(
        WorkflowDefinition(name=name, steps=tuple(steps), version=version, on_end=on_end)
    )

"""Workflows: steps that wait for the steps they depend on, each an ordinary run.

:func:`start_workflow` writes the workflow, one :class:`~django_weft.models.WorkflowStep`
row and one run per step, in one transaction: a step with no dependency is queued, the
others are ``waiting``, never claimed. Each step's finish (:func:`step_ended`, called by
the finish step in its transaction) counts down ``pending`` on the steps after it, under
their row locks: the finish that takes a step to zero queues it (or cancels it, when a
dependency it needed did not end ``done``), exactly once, however many workers finish
dependencies at the same moment, and not at all if that finish rolls back. A failed
dependency cancels its dependents at once rather than when their other dependencies end.
The finish that ends the last unfinished step ends the workflow. A step that is a group
is started the same way, its run waiting for its group rather than queued (see
:mod:`~django_weft.engine.flows.group_steps`).

Cancelling is a finish too (the run ends ``aborted``, its error naming the dependency),
done by the caller: :func:`step_ended` returns what to cancel, since a finish belongs to
:mod:`~django_weft.engine.outcomes`, a layer above this one.

Rows are locked in one order everywhere: a run, then the steps' rows (by primary key),
then the workflow's row; so two finishes, a retry and an abort never wait in a circle.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from django.db import transaction
from django.db.models import F

from django_weft.engine.database import sql
from django_weft.engine.flows.group_steps import GATHER, fan_out, fan_out_again
from django_weft.engine.flows.keys import insert_keyed, started_before
from django_weft.engine.runs.starting import StartRequest, insert_run, scoped_key
from django_weft.exceptions import InvalidArgs, InvalidWorkflowStep, StepNotRetriable
from django_weft.jobs.registry import registry
from django_weft.jobs.workflows import Step, WorkflowDefinition, workflows
from django_weft.live.changes import Changes
from django_weft.models import Run, RunStatus, Workflow, WorkflowStatus, WorkflowStep
from django_weft.signals import workflow_ended

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

#: The error type a cancelled step's run records.
CANCELLED = "DependencyFailed"


@dataclass(frozen=True)
class Cancel:
    """A step's run to end ``aborted``, and why (a dependency that did not end done, a
    group that could not start)."""

    run_id: uuid.UUID
    reason: str

    @property
    def message(self) -> str:
        return f"cancelled: {self.reason}"


def start_workflow(
    definition: WorkflowDefinition,
    args: Mapping[str, Any] | None,
    *,
    now: datetime,
    changes: Changes,
    owner: AbstractBaseUser | None = None,
    key: str | None = None,
) -> tuple[Workflow, bool]:
    """Start ``definition`` with ``args`` as ``owner``, in one transaction: all of it or
    nothing. With ``key``, a workflow started before with that key (the owner's own) is
    returned as it is, and False.

    Raises :class:`~django_weft.exceptions.InvalidWorkflowStep` naming the first step whose args
    its job refuses, before anything is written.
    """
    given = dict(args or {})
    stored_key = None if key is None else scoped_key(key, owner)
    with transaction.atomic():
        existing = started_before(Workflow, stored_key)
        if existing is not None:
            return existing, False
        workflow, made = insert_keyed(
            Workflow(
                name=definition.name,
                version=definition.version,
                owner=cast(Any, owner),
                idempotency_key=stored_key,
                args=given,
                created_at=now,
                total=len(definition.steps),
                unfinished=len(definition.steps),
            )
        )
        if not made:
            return workflow, False
        steps = [
            _start_step(workflow, position, step, given, now, changes)
            for position, step in enumerate(definition.steps)
        ]
        WorkflowStep.objects.bulk_create(steps)
        for step in steps:
            if step.fans_out and not step.depends_on:
                problem = fan_out(workflow, step, now=now, changes=changes)
                if problem:
                    raise InvalidWorkflowStep(step.name, problem)
    return workflow, True


def _start_step(
    workflow: Workflow,
    position: int,
    step: Step,
    given: Mapping[str, Any],
    now: datetime,
    changes: Changes,
) -> WorkflowStep:
    """The unsaved row of ``step`` and its run, written: waiting for its dependencies
    (a group step's for its group too), else queued."""
    if step.each is not None:
        request = StartRequest(
            registry.get(GATHER), {}, owner=workflow.owner, queue=step.job.queue, waiting=True
        )
    else:
        request = StartRequest(
            step.job,
            _step_args(step.name, step.args_for, given),
            owner=workflow.owner,
            waiting=bool(step.after),
        )
    try:
        run = insert_run(replace(request, workflow=workflow), now=now)
    except InvalidArgs as error:
        raise InvalidWorkflowStep(step.name, str(error)) from error
    changes.run(run.pk)
    return WorkflowStep(
        workflow=workflow,
        name=step.name,
        position=position,
        job=step.job.name,
        depends_on=list(step.after),
        runs_anyway=step.runs_anyway,
        pending=len(step.after),
        fans_out=step.each is not None,
        run=run,
    )


def _step_args(name: str, args_for: Any, given: Mapping[str, Any]) -> Mapping[str, Any]:
    """A step's args from the workflow's; a step whose args function raises is refused
    by name, as one whose job refuses its args is."""
    try:
        found = args_for(given)
    except Exception as error:
        raise InvalidWorkflowStep(name, f"its args could not be made: {error!r}") from error
    if not isinstance(found, Mapping):
        raise InvalidWorkflowStep(name, f"its args are {type(found).__name__}, not a mapping")
    return found


def step_ended(run: Run, *, now: datetime, changes: Changes) -> list[Cancel]:
    """Count the end of ``run``, a workflow's step, in the caller's (the finish's)
    transaction: queue the steps it was the last pending dependency of (or start their
    groups), and return the steps to cancel (whose run the caller finishes, which comes
    back here for theirs). The last step to end ends the workflow."""
    if run.workflow_id is None:
        return []
    steps = list(
        WorkflowStep.objects.filter(workflow_id=run.workflow_id)
        .select_related("run")
        .order_by("pk")
    )
    step = next((each for each in steps if each.run_id == run.pk), None)
    if step is None:
        return []  # a step's earlier run, replaced by a retry
    ok = run.status == RunStatus.DONE
    cancels = []
    for dependent in steps:
        if step.name not in dependent.depends_on or not _waits(dependent):
            continue
        if not ok and not dependent.runs_anyway:
            cancels.append(_cancel(dependent, step.name, str(run.status)))
        elif sql.count_down(WorkflowStep, dependent.pk, "pending") == 0:
            cancel = _ready(dependent, now, changes)
            if cancel is not None:
                cancels.append(cancel)
    if sql.count_down(Workflow, step.workflow_id, "unfinished") == 0:
        _end(Workflow.objects.get(pk=step.workflow_id), now, changes)
    return cancels


def _ready(step: WorkflowStep, now: datetime, changes: Changes) -> Cancel | None:
    """``step``'s last dependency has ended: queue it (or start its group), or say why
    it is cancelled instead."""
    blocker = _blocker(step)
    if blocker is not None:
        return _cancel(step, blocker.name, blocker.status)
    if not step.fans_out:
        _queue(step, changes)
        return None
    workflow = Workflow.objects.select_related("owner").get(pk=step.workflow_id)
    problem = fan_out(workflow, step, now=now, changes=changes)
    return Cancel(cast(uuid.UUID, step.run_id), problem) if problem else None


def _cancel(dependent: WorkflowStep, dependency: str, outcome: str) -> Cancel:
    return Cancel(cast(uuid.UUID, dependent.run_id), f"step {dependency} ended {outcome}")


@dataclass(frozen=True)
class _Blocker:
    name: str
    status: str


def _blocker(dependent: WorkflowStep) -> _Blocker | None:
    """The dependency of ``dependent`` that did not end done, if it needs them done.

    Read now, not with the steps this finish read first: the finish of another
    dependency may have committed while this one waited for the row lock (this one's own
    run is read as this transaction wrote it).
    """
    if dependent.runs_anyway:
        return None
    statuses = dict(
        WorkflowStep.objects.filter(
            workflow_id=dependent.workflow_id, name__in=dependent.depends_on
        ).values_list("name", "run__status")
    )
    for name in dependent.depends_on:
        status = statuses.get(name) or RunStatus.LOST  # a deleted run is as good as lost
        if status != RunStatus.DONE:
            return _Blocker(name, str(status))
    return None


def _status(step: WorkflowStep) -> str:
    return str(step.run.status) if step.run is not None else str(RunStatus.LOST)


def _waits(step: WorkflowStep) -> bool:
    """Whether ``step``'s run still waits for its dependencies (not cancelled yet)."""
    return step.run is not None and step.run.status == RunStatus.WAITING


def _queue(step: WorkflowStep, changes: Changes) -> None:
    run_id = cast(uuid.UUID, step.run_id)
    Run.objects.filter(pk=run_id, status=RunStatus.WAITING).update(status=RunStatus.QUEUED)
    changes.run(run_id)


def _end(workflow: Workflow, now: datetime, changes: Changes) -> None:
    """End ``workflow`` (its row locked by the caller) and start its ``on_end`` job."""
    statuses = set(
        Run.objects.filter(workflow_step__workflow=workflow).values_list("status", flat=True)
    )
    if workflow.abort_requested_at is not None and statuses != {RunStatus.DONE}:
        outcome = WorkflowStatus.ABORTED
    elif statuses == {RunStatus.DONE}:
        outcome = WorkflowStatus.DONE
    else:
        outcome = WorkflowStatus.FAILED
    Workflow.objects.filter(pk=workflow.pk).update(status=outcome, ended_at=now)
    transaction.on_commit(partial(_announce, workflow.pk, str(outcome)))
    definition = workflows.known(workflow.name)
    if definition is None or definition.on_end is None:
        return
    callback = insert_run(
        StartRequest(
            definition.on_end,
            {"workflow": str(workflow.pk), "outcome": str(outcome)},
            owner=workflow.owner,
        ),
        now=now,
    )
    Workflow.objects.filter(pk=workflow.pk).update(callback_run=callback)
    changes.run(callback.pk)


def request_abort(workflow: Workflow, now: datetime) -> None:
    """Note that an abort of ``workflow`` was asked for, so that its end says so."""
    Workflow.objects.filter(pk=workflow.pk, abort_requested_at__isnull=True).update(
        abort_requested_at=now
    )


def retry_step(workflow: Workflow, name: str, *, now: datetime, changes: Changes) -> Run:
    """Run step ``name`` again, with a new run, and every step below it that did not end
    done: the workflow goes on below it without re-running what was done. The step must
    have ended other than done, and each step it depends on done (else
    :class:`~django_weft.exceptions.StepNotRetriable` says which to retry first).
    Returns the step's new run.

    A step below it that still waits (a step that runs anyway, waiting for another
    dependency too) keeps its run and waits for the new one as well. A group step
    retried starts again only its members that did not end done; one below it starts
    its group afresh when its dependencies have ended again.
    """
    with transaction.atomic():
        steps = list(
            WorkflowStep.objects.select_for_update(of=("self",))
            .filter(workflow=workflow)
            .select_related("run", "group")
            .order_by("pk")
        )
        locked = Workflow.objects.select_for_update().get(pk=workflow.pk)
        by_name = {step.name: step for step in steps}
        _check_retriable(name, by_name)
        again = _below(name, steps)
        names = {each.name for each in again}
        started = 0
        for each in again:
            pending = sum(
                1
                for dependency in each.depends_on
                if dependency in names or _unfinished(by_name[dependency])
            )
            if _unfinished(each):
                WorkflowStep.objects.filter(pk=each.pk).update(pending=pending)
                continue
            old = each.run
            each.run = insert_run(
                StartRequest(
                    registry.get(GATHER if each.fans_out else each.job),
                    old.args if old is not None else {},
                    owner=locked.owner,
                    priority=old.priority if old is not None else None,
                    queue=old.queue if old is not None else None,
                    retry_of=old,
                    workflow=locked,
                    waiting=each.name != name or each.fans_out,
                ),
                now=now,
            )
            WorkflowStep.objects.filter(pk=each.pk).update(run=each.run, pending=pending)
            changes.run(each.run.pk)
            started += 1
            if each.fans_out:
                _group_again(locked, each, pending, now, changes)
        Workflow.objects.filter(pk=locked.pk).update(
            status=WorkflowStatus.RUNNING,
            ended_at=None,
            abort_requested_at=None,
            unfinished=F("unfinished") + started,
        )
    retried = WorkflowStep.objects.select_related("run").get(pk=by_name[name].pk).run
    assert retried is not None
    return retried


def _group_again(
    workflow: Workflow, step: WorkflowStep, pending: int, now: datetime, changes: Changes
) -> None:
    """The group of ``step``, a group step given a new run by a retry: its members that
    did not end done start again now, if its dependencies have all ended; else it
    starts its group afresh once they have (their results may differ)."""
    assert step.run is not None
    if pending:
        WorkflowStep.objects.filter(pk=step.pk).update(group=None, members=[])
    elif step.group is not None:
        fan_out_again(step, step.run, now=now, changes=changes)
    else:
        problem = fan_out(workflow, step, now=now, changes=changes)
        if problem:
            raise StepNotRetriable(step.name, problem)


def _check_retriable(name: str, by_name: Mapping[str, WorkflowStep]) -> None:
    step = by_name.get(name)
    if step is None:
        raise StepNotRetriable(name, "the workflow has no such step")
    if step.run is not None and (not step.run.is_finished or step.run.status == RunStatus.DONE):
        raise StepNotRetriable(name, f"its run is {step.run.status}")
    if step.group is not None and step.group.ended_at is None:
        raise StepNotRetriable(name, "some members of its group have not ended")
    if not step.runs_anyway:
        for dependency in step.depends_on:
            if _status(by_name[dependency]) != RunStatus.DONE:
                raise StepNotRetriable(name, f"retry step {dependency} first")


def _below(name: str, steps: list[WorkflowStep]) -> list[WorkflowStep]:
    """Step ``name`` and the steps below it that did not end done and are not under way
    (ended otherwise, or still waiting), in definition order (which puts each after its
    dependencies)."""
    found = {name}
    below = []
    for step in sorted(steps, key=lambda each: each.position):
        if step.name == name or (
            found.intersection(step.depends_on)
            and _status(step) != RunStatus.DONE
            and (not _unfinished(step) or _waits(step))
        ):
            found.add(step.name)
            below.append(step)
    return below


def _unfinished(step: WorkflowStep) -> bool:
    return step.run is not None and not step.run.is_finished


def _announce(workflow_id: uuid.UUID, outcome: str) -> None:
    ended = Workflow.objects.filter(pk=workflow_id).first()
    if ended is not None:
        workflow_ended.send_robust(sender=Workflow, workflow=ended, outcome=outcome)

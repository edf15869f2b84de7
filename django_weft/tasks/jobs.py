"""A task as the engine sees it: a :class:`TaskJob`, registered under its module path.

The engine claims, times, retries and finishes runs of registered jobs; a task becomes
one when it is first enqueued in a process, or when the process first needs its path (the
worker that claims its runs, a form that saves a schedule of it): the registry's finder,
:func:`django_weft.tasks.backend.find_task_job`, looks the path up among the tasks
declared in this process (:mod:`django_weft.tasks.declared`) and never imports it. Its
runs store ``{"args": [...], "kwargs": {...}}``; the job's function finds the task
declared at the stored path again on each attempt, so what runs is the code deployed now.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from django_weft.exceptions import InvalidArgs
from django_weft.jobs.context import RunContext
from django_weft.jobs.limits import named_limits
from django_weft.jobs.registry import Job, JobFunction
from django_weft.tasks.declared import declared_task
from django_weft.tasks.framework import TaskContext, normalize_json, task_started
from django_weft.tasks.results import earlier_attempts, result_of, stored_task

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from django_weft.tasks.framework import AnyTask

#: The keys of a task run's stored args.
ARGS_KEYS = frozenset({"args", "kwargs"})
ARGS_SHAPE = 'Expected {"args": [...], "kwargs": {...}}.'


@dataclass
class TaskJob(Job):
    """The job that runs the task at path ``name``; its options come from the task."""

    def parse_args(self, data: object, owner: AbstractBaseUser | None) -> dict[str, Any]:
        """``{"args": [...], "kwargs": {...}}`` as JSON, bound to the task's signature.

        A missing, unknown or extra argument is refused here rather than at the first
        attempt, since a call that does not bind fails the same way at every attempt.
        """
        if not isinstance(data, Mapping) or set(data) - ARGS_KEYS:
            raise InvalidArgs(self.name, {"args": [ARGS_SHAPE]})
        positional, named = data.get("args", []), data.get("kwargs", {})
        if not isinstance(positional, list | tuple) or not isinstance(named, Mapping):
            raise InvalidArgs(self.name, {"args": [ARGS_SHAPE]})
        try:
            stored: dict[str, Any] = normalize_json(  # type: ignore[assignment]
                {"args": list(positional), "kwargs": dict(named)}
            )
        except TypeError as error:
            raise InvalidArgs(self.name, {"args": [str(error)]}) from None
        task = declared_task(self.name)
        if task is not None:
            signature = inspect.signature(task.func)
            context = [None] if task.takes_context else []
            try:
                signature.bind(*context, *stored["args"], **stored["kwargs"])
            except TypeError as error:
                raise InvalidArgs(self.name, {"args": [f"{error}."]}) from None
        return stored

    def public_args(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        """The args without the private ones: by name, and by position where the
        signature names the position."""
        private = set(self.private_args)
        task = declared_task(self.name)
        names = list(inspect.signature(task.func).parameters) if task is not None else []
        if task is not None and task.takes_context:
            names = names[1:]
        positional = list(stored.get("args", []))
        return {
            "args": [
                value
                for index, value in enumerate(positional)
                if index >= len(names) or names[index] not in private
            ],
            "kwargs": {k: v for k, v in dict(stored.get("kwargs", {})).items() if k not in private},
        }


def job_for(task: AnyTask, *, retry: Any, timeout: Any) -> TaskJob:
    """The job that runs ``task``, with the retry and timeout it ends up with."""
    concurrency_key = getattr(task, "concurrency_key", None)
    return TaskJob(
        func=runner(task.module_path, task.func.__doc__),
        name=task.module_path,
        queue=task.queue_name,
        priority=task.priority,
        retry=retry,
        timeout=timeout,
        concurrency=getattr(task, "concurrency", None),
        concurrency_key=concurrency_key,
        limits=named_limits(
            task.module_path, getattr(task, "limits", ()), keyed=concurrency_key is not None
        ),
        debounce=getattr(task, "debounce", None),
        throttle=getattr(task, "throttle", None),
        state=getattr(task, "state", None),
        private_args=tuple(getattr(task, "private_args", ())),
        task_backend=task.backend,
    )


@cache
def runner(path: str, doc: str | None) -> JobFunction:
    """The job function of the task at ``path``: one per path, so that registering a job
    for it again (a ``.using()`` copy) is registering the same one. It carries the task's
    docstring, which the console shows beside the job's name."""

    def run(
        context: RunContext,
        *,
        args: list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        return run_task(path, context, args=args, kwargs=kwargs)

    run.__doc__ = doc
    run.__qualname__ = run.__name__ = path.rpartition(".")[2]
    return run


def run_task(
    path: str,
    context: RunContext,
    *,
    args: list[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
) -> Any:
    """One attempt of a task's run, on the worker's run thread.

    ``task_started`` goes out first, with the result as of this attempt (``RUNNING``,
    ``attempt`` counting from 1); a ``takes_context`` task gets it in a ``TaskContext``.
    The return value must be JSON as Django's ``normalize_json`` makes it; what it is
    not fails the attempt with Django's ``TypeError``.
    """
    run = context.run
    task = stored_task(run)
    result = result_of(run, earlier_attempts(run), task=task)
    task_started.send(sender=type(task.get_backend()), task_result=result)
    positional = list(args or [])
    if task.takes_context:
        positional.insert(0, TaskContext(task_result=result))
    return normalize_json(task.call(*positional, **(kwargs or {})))

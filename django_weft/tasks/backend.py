"""``WeftBackend``: ``django.tasks`` tasks enqueued as weft runs and run by ``runjobs``.

``TASKS = {"default": {"BACKEND": "django_weft.tasks.WeftBackend"}}`` is the whole
switch. ``enqueue()`` starts a run through the same start step as ``django_weft.start``,
in the caller's transaction (a run enqueued in ``atomic()`` commits or rolls back with
it, and no worker sees it before); the worker claims it like any run, runs the task
declared at its stored path, and records the outcome; ``get_result()`` reads it back
(:mod:`django_weft.tasks.results`). A path resolves only to a task its process defined:
every app's ``tasks`` module and ``WEFT_JOB_MODULES`` are imported at start-up, and no
name is ever imported (:mod:`django_weft.tasks.declared`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import wraps
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from asgiref.sync import sync_to_async
from django.apps import apps
from django.conf import settings
from django.core import checks
from django.core.signals import setting_changed
from django.db import connections
from django.utils.module_loading import autodiscover_modules, import_string

from django_weft import operations
from django_weft.engine.runs.starting import StartRequest
from django_weft.jobs.registry import Job, registry
from django_weft.tasks.declared import declare, declared_task
from django_weft.tasks.framework import (
    BaseTaskBackend,
    InvalidTask,
    InvalidTaskBackend,
    TaskResultDoesNotExist,
    normalize_json,
    task_backends,
    task_enqueued,
)
from django_weft.tasks.jobs import TaskJob, job_for
from django_weft.tasks.options import (
    WeftTask,
    backend_option_problems,
    check_options,
    task_setting,
)
from django_weft.tasks.results import earlier_attempts, parse_id, result_of, task_runs

if TYPE_CHECKING:
    from django_weft.tasks.framework import AnyResult, AnyTask, Task, TaskResult

logger = logging.getLogger("django_weft.tasks")

P = ParamSpec("P")
R = TypeVar("R")


class WeftBackend(BaseTaskBackend):
    """Runs ``django.tasks`` tasks on weft workers, with weft's history, retries and abort.

    ``QUEUES`` are validated by Django (``[]`` allows any queue); ``OPTIONS`` may hold
    ``retry`` (a :class:`~django_weft.jobs.retries.Retry`) and ``timeout`` (seconds) for
    every task of this backend that does not set its own.
    """

    task_class = WeftTask
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def validate_task(self, task: AnyTask) -> None:
        """Django's validation, then weft's options; a valid task is declared, so that its
        path resolves in this process (:mod:`django_weft.tasks.declared`).

        Called when a task is defined (and copied with ``.using()``) and at every enqueue.
        """
        super().validate_task(task)
        check_options(task)
        declare(task)

    def job_for(self, task: AnyTask) -> TaskJob:
        """The job that runs ``task`` on this backend."""
        return job_for(
            task,
            retry=task_setting(task, "retry", self.options),
            timeout=task_setting(task, "timeout", self.options),
        )

    def enqueue(
        self, task: Task[P, R], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> TaskResult[P, R]:
        """Start a run of ``task`` in the caller's transaction and return its result.

        Non-JSON arguments raise Django's ``TypeError`` and arguments that do not bind
        to the function ``InvalidArgs``; a concurrency limit raises
        ``ConcurrencyLimitReached``. In each case nothing is written.
        """
        self.validate_task(task)
        job = registry.known(task.module_path) or registry.register(self.job_for(task))
        if not isinstance(job, TaskJob):
            raise InvalidTask(f"{task.module_path!r} names a weft job, not a task")
        positional, named = list(args), dict(kwargs)
        stored: dict[str, Any] = normalize_json({"args": positional, "kwargs": named})  # type: ignore[assignment]
        request = StartRequest(
            job,
            stored,
            priority=task.priority,
            queue=task.queue_name,
            not_before=task.run_after,
        )
        run, _ = operations.start_or_get(request)
        result = result_of(run, [], task=task)
        task_enqueued.send(sender=type(self), task_result=result)
        return cast("TaskResult[P, R]", result)

    async def aenqueue(
        self, task: Task[P, R], args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> TaskResult[P, R]:
        """:meth:`enqueue` on a worker thread: the event loop goes on meanwhile.

        Not thread-sensitive: a start is one short transaction of its own that shares
        nothing with the caller's thread, so async callers do not queue up behind one
        thread. (Inside a transaction opened in sync code, ``enqueue`` is the one that
        joins it.)
        """
        enqueue = sync_to_async(closing(self.enqueue), thread_sensitive=False)
        enqueued: TaskResult[P, R] = await enqueue(task, args, kwargs)
        return enqueued

    def get_result(self, result_id: str) -> AnyResult:
        """The result of the task run ``result_id``, in at most two queries.

        ``TaskResultDoesNotExist`` for an id that is no UUID, names no run, or names the
        run of a plain job.
        """
        run = task_runs().filter(pk=parse_id(result_id)).first()
        if run is None:
            raise TaskResultDoesNotExist(f"no task result {result_id!r}")
        return result_of(run, earlier_attempts(run))

    async def aget_result(self, result_id: str) -> AnyResult:
        """:meth:`get_result` on a worker thread, as :meth:`aenqueue` does."""
        found: AnyResult = await sync_to_async(closing(self.get_result), thread_sensitive=False)(
            result_id
        )
        return found

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """Configuration errors of this backend, each with a ``django_weft.`` id."""
        return list(self._problems())

    def _problems(self) -> Iterator[checks.CheckMessage]:
        for problem in backend_option_problems(self.options):
            check_id = "django_weft.E050" if problem.startswith("unknown") else "django_weft.E051"
            yield checks.Error(f'TASKS["{self.alias}"]: {problem}.', id=check_id)
        if not apps.is_installed("django_weft"):
            yield checks.Error(
                f'TASKS["{self.alias}"] uses django_weft.tasks.WeftBackend, '
                'but "django_weft" is not in INSTALLED_APPS.',
                hint='Add "django_weft" to INSTALLED_APPS and run migrate.',
                id="django_weft.E052",
            )


def closing(call: Callable[P, R]) -> Callable[P, R]:
    """``call``, closing the database connections it opened on its thread once it returns.

    The threads ``sync_to_async(thread_sensitive=False)`` runs on belong to a pool that
    nothing else cleans up: a connection left there would stay open for good.
    """

    @wraps(call)
    def closed(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return call(*args, **kwargs)
        finally:
            connections.close_all()

    return closed


def find_task_job(name: str) -> Job | None:
    """The job of the task declared at ``name``, if a ``WeftBackend`` runs it: the
    registry's finder.

    A dictionary read: a name nothing declared in this process names no task, whatever
    module it points at, and nothing is imported to find out (see
    :mod:`django_weft.tasks.declared`).
    """
    task = declared_task(name)
    if task is None:
        return None
    try:
        backend = task.get_backend()
    except InvalidTaskBackend as error:
        logger.warning("%s cannot run as a task here: %s", name, error)
        return None
    return backend.job_for(task) if isinstance(backend, WeftBackend) else None


def forget_task_jobs(*, setting: str, **kwargs: Any) -> None:
    """``TASKS`` changed (a test's ``override_settings``): each task's job is built again
    from its new backend the next time it is needed."""
    if setting == "TASKS":
        for job in list(registry):
            if isinstance(job, TaskJob):
                registry.unregister(job.name)


def runs_tasks() -> bool:
    """Whether ``TASKS`` gives any alias a ``WeftBackend`` (or a subclass of it).

    Read from the setting's import strings, without building a backend: a misconfigured
    alias is the tasks framework's own check to report, not a start-up crash here.
    """
    for config in dict(getattr(settings, "TASKS", {})).values():
        try:
            backend = import_string(config["BACKEND"])
        except (ImportError, KeyError, TypeError):
            continue
        if isinstance(backend, type) and issubclass(backend, WeftBackend):
            return True
    return False


def install() -> None:
    """Let every process find tasks by path and forget them when ``TASKS`` changes; where
    weft runs tasks, declare every installed app's ``tasks`` module's tasks, as the admin
    imports ``admin`` modules, so that a task path resolves alike in every process."""
    registry.add_finder(find_task_job)
    setting_changed.connect(forget_task_jobs, dispatch_uid="django_weft.tasks.forget")
    if runs_tasks():
        autodiscover_modules("tasks")


__all__ = ["WeftBackend", "find_task_job", "install", "runs_tasks", "task_backends"]

"""Django's own task fixtures (``tests/tasks/tasks.py`` in Django's source), re-created.

Django ships its test suite in the sdist only, so the contract tests restate its cases
against :class:`~django_weft.tasks.WeftBackend` with these: same names, same bodies.
The tasks use the ``default`` backend of ``tests/settings.py``'s ``TASKS``.
"""

from __future__ import annotations

from typing import Any

from django_weft.tasks.framework import TaskContext, task, task_backends

#: ``django.tasks``, or ``django_tasks`` (the backport on Django 5.2).
FRAMEWORK = type(task_backends).__module__
LOGGER = "django.tasks" if FRAMEWORK == "django.tasks" else "django_tasks"
"""The logger of the framework's task lines."""
IMMEDIATE = {"default": {"BACKEND": f"{FRAMEWORK}.backends.immediate.ImmediateBackend"}}
"""A ``TASKS`` setting of the framework's ImmediateBackend."""


@task()
def noop_task(*args: Any, **kwargs: Any) -> None:
    return None


@task
def noop_task_from_bare_decorator(*args: Any, **kwargs: Any) -> None:
    return None


@task()
async def noop_task_async(*args: Any, **kwargs: Any) -> None:
    return None


@task()
def calculate_meaning_of_life() -> int:
    return 42


@task()
def failing_task_value_error() -> None:
    raise ValueError("This task failed due to ValueError")


@task()
def failing_task_system_exit() -> None:
    raise SystemExit("This task failed due to SystemExit")


@task()
def failing_task_keyboard_interrupt() -> None:
    raise KeyboardInterrupt("This task failed due to KeyboardInterrupt")


@task()
def complex_exception() -> None:
    raise ValueError(ValueError("This task failed"))


@task()
def complex_return_value() -> Any:
    # Return something which isn't JSON serializable nor picklable.
    return lambda: True


@task()
def exit_task() -> None:
    exit(1)


@task(takes_context=True)
def get_task_id(context: TaskContext) -> str:
    return context.task_result.id


@task(takes_context=True)
def test_context(context: TaskContext, attempt: int) -> None:
    assert isinstance(context, TaskContext)
    assert context.attempt == attempt

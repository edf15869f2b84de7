"""``@task(**options)`` reaches ``WeftBackend.task_class`` (Django 6.1, and the backport).

Collected only where ``task()`` takes extra keywords (``tests/tasks/conftest.py``); on
Django 6.0 a WeftTask is made directly, or ``OPTIONS`` sets retry and timeout.
"""

from __future__ import annotations

import pytest

from django_weft.tasks import WeftTask
from django_weft.tasks.framework import InvalidTask, task
from tests.tasks import fixtures


def test_custom_task_class_kwargs() -> None:
    """``@task(**options)`` reaches WeftTask."""
    made = task(timeout=30, concurrency=2, private_args=("secret",))(fixtures.noop_task.func)
    assert isinstance(made, WeftTask)
    assert (made.timeout, made.concurrency, made.private_args) == (30, 2, ("secret",))


def test_custom_task_class_unknown_kwarg() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'nonsense'"):
        task(nonsense=1)(fixtures.noop_task.func)


def test_a_bad_option_through_the_decorator_is_invalid_task() -> None:
    """``task(timeout=0)`` fails where the task is defined, naming the option."""
    with pytest.raises(InvalidTask, match="timeout"):
        task(timeout=0)(fixtures.noop_task.func)

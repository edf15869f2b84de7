from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest

from django_weft.jobs.registry import registry
from django_weft.tasks.framework import Task, task
from django_weft.tasks.jobs import TaskJob


@pytest.fixture(autouse=True)
def _no_task_job_left_registered() -> Iterator[None]:
    """The jobs a test's tasks registered are gone after it: other tests list the
    registry's jobs, and a task's job is built again from its task when next needed."""
    yield
    for job in list(registry):
        if isinstance(job, TaskJob):
            registry.unregister(job.name)


def _task_takes_options() -> bool:
    """Whether ``task()`` hands extra keywords to the backend's task_class (Django 6.1)."""
    return "kwargs" in inspect.signature(task).parameters


#: Tests of what some framework versions lack, left out where they lack it (not skipped).
collect_ignore = [
    *([] if hasattr(Task, "_reconstruct") else ["test_pickling.py"]),
    *([] if _task_takes_options() else ["test_task_class_options.py"]),
]

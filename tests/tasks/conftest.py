from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_weft.jobs.registry import registry
from django_weft.tasks.jobs import TaskJob


@pytest.fixture(autouse=True)
def _no_task_job_left_registered() -> Iterator[None]:
    """The jobs a test's tasks registered are gone after it: other tests list the
    registry's jobs, and a task's job is built again from its task when next needed."""
    yield
    for job in list(registry):
        if isinstance(job, TaskJob):
            registry.unregister(job.name)

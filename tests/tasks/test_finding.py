"""How a process finds a task it has not imported: by its path, through the registry."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest
from django.test import override_settings

from django_weft.console.schedule_form import job_options
from django_weft.jobs.registry import registry
from django_weft.tasks import backend
from django_weft.tasks.backend import NOT_TASKS_KEPT, find_task_job
from django_weft.tasks.jobs import TaskJob
from django_weft.testing import Rehearsal
from tests.tasks import fixtures


def test_a_tasks_path_imports_its_module_and_finds_its_job() -> None:
    """The registry asks the finder for a name no module registered."""
    sys.modules.pop("tests.tasks.unimported", None)
    path = "tests.tasks.unimported.double"
    assert registry.known(path) is None
    job = registry.get(path)
    assert isinstance(job, TaskJob)
    assert "tests.tasks.unimported" in sys.modules
    assert job.task_backend == "default"


def test_what_is_no_weft_task_is_not_found() -> None:
    """A path that does not import, a function that is no task, a task of another backend."""
    assert find_task_job("tests.tasks.nowhere.task") is None
    assert find_task_job("json.dumps") is None
    assert find_task_job("no_dots") is None
    with override_settings(TASKS=fixtures.IMMEDIATE):
        assert find_task_job(fixtures.calculate_meaning_of_life.module_path) is None
    assert find_task_job(fixtures.calculate_meaning_of_life.module_path) is not None


def test_names_that_are_no_task_are_kept_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages listing runs of removed jobs do not import them per row; made-up names do not
    grow the memory for ever."""
    monkeypatch.setattr(backend, "_not_tasks", set())
    for number in range(NOT_TASKS_KEPT + 5):
        assert find_task_job(f"gone.job_{number}") is None
    assert len(backend._not_tasks) <= NOT_TASKS_KEPT
    assert "gone.job_1004" in backend._not_tasks


def test_the_worker_finds_the_tasks_of_queued_runs(rehearsal: Rehearsal) -> None:
    """A worker that never imported a task claims its runs once a look finds its path."""
    result = fixtures.calculate_meaning_of_life.enqueue()
    registry.unregister(fixtures.calculate_meaning_of_life.module_path)
    rehearsal.advance(timedelta(0))
    result.refresh()
    assert result.return_value == 42


def test_a_tasks_job_carries_its_docstring_for_the_console() -> None:
    """The console lists jobs with their docstring's first line; a task's is its own."""
    job = registry.get("tests.tasks.unimported.double")
    assert job.func.__doc__ == "Doubles ``number``."
    assert registry.get("tests.tasks.unimported.double").func is job.func


@pytest.mark.django_db
def test_the_console_offers_an_enqueued_task_next_to_the_jobs() -> None:
    """Once this process has a task's job, the schedule form lists it with the jobs."""
    fixtures.calculate_meaning_of_life.enqueue()
    offered = dict(job_options())
    assert fixtures.calculate_meaning_of_life.module_path in offered
    assert "tests.noop" in offered

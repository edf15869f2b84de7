"""How a process finds a task by its path: only among the tasks it defined, never by
importing what a name points at."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_weft.apps import import_job_modules
from django_weft.console.schedule_form import job_options
from django_weft.exceptions import UnknownJob
from django_weft.jobs.registry import registry
from django_weft.tasks.backend import find_task_job
from django_weft.tasks.declared import declared_task
from django_weft.tasks.jobs import TaskJob
from django_weft.testing import Rehearsal
from tests.tasks import fixtures

UNIMPORTED = "tests.tasks.unimported"


@pytest.fixture
def forget_unimported() -> Iterator[None]:
    """``tests.tasks.unimported`` as if no test had imported it, before and after."""
    sys.modules.pop(UNIMPORTED, None)
    yield
    sys.modules.pop(UNIMPORTED, None)


@pytest.mark.usefixtures("forget_unimported")
@pytest.mark.parametrize(
    "name", [f"{UNIMPORTED}.double", "this.s", "antigravity.geohash", "tests.taskapp.nowhere.task"]
)
def test_a_name_never_imports_the_module_it_points_at(name: str) -> None:
    """A task path nothing declared is an unknown job, and its module stays unimported:
    a client's string never chooses what a process imports (the standard library's
    ``this`` would print, a module's jobs would register)."""
    module = name.rpartition(".")[0]
    before = module in sys.modules
    with pytest.raises(UnknownJob):
        registry.get(name)
    assert name not in registry
    assert (module in sys.modules) is before
    assert find_task_job(name) is None


@pytest.mark.parametrize("name", [".relative", "..up", "trailing.", "a..b", "", "no_dots"])
def test_a_malformed_name_is_an_unknown_job_not_an_error(name: str) -> None:
    """Names that an import would choke on (``TypeError`` for a leading dot) are looked
    up like any other: a dictionary read that finds nothing."""
    with pytest.raises(UnknownJob):
        registry.get(name)


@pytest.mark.usefixtures("forget_unimported")
def test_job_modules_declare_the_tasks_they_define() -> None:
    """``WEFT_JOB_MODULES`` is the allow-list: its modules are imported at start-up, and
    the tasks they define resolve by path from then on."""
    path = f"{UNIMPORTED}.double"
    with override_settings(WEFT_JOB_MODULES=[UNIMPORTED]):
        import_job_modules()
    job = registry.get(path)
    assert isinstance(job, TaskJob)
    assert job.task_backend == "default"
    assert job.func.__doc__ == "Doubles ``number``."


def test_a_job_module_that_does_not_import_stops_the_start_up() -> None:
    """As a mistyped ``INSTALLED_APPS`` entry does, naming the module."""
    with (
        override_settings(WEFT_JOB_MODULES=["tests.tasks.nowhere"]),
        pytest.raises(ImproperlyConfigured, match=r"'tests\.tasks\.nowhere', which does not"),
    ):
        import_job_modules()


@pytest.fixture
def without_task_app() -> Iterator[None]:
    """tests/taskapp's ``tasks`` module not imported, before and after."""
    sys.modules.pop("tests.taskapp.tasks", None)
    yield
    sys.modules.pop("tests.taskapp.tasks", None)


def installing_task_app() -> override_settings:
    """tests/taskapp installed: Django populates its apps again and calls each app's
    ``ready()``, weft's start-up included."""
    return override_settings(INSTALLED_APPS=[*settings.INSTALLED_APPS, "tests.taskapp"])


@pytest.mark.usefixtures("without_task_app")
def test_start_up_declares_every_apps_tasks_module() -> None:
    """Where weft runs ``django.tasks``, each installed app's ``tasks`` module is
    imported at start-up, so its tasks resolve in every process (the worker, the web)."""
    with installing_task_app():
        assert declared_task("tests.taskapp.tasks.ping") is not None
        assert isinstance(registry.get("tests.taskapp.tasks.ping"), TaskJob)


@pytest.mark.usefixtures("without_task_app")
def test_start_up_leaves_tasks_modules_alone_where_weft_runs_no_tasks() -> None:
    """With another backend in ``TASKS``, an app's ``tasks`` module is its own business."""
    with override_settings(TASKS=fixtures.IMMEDIATE), installing_task_app():
        assert "tests.taskapp.tasks" not in sys.modules


def test_what_is_no_weft_task_is_not_found() -> None:
    """A function that is no task, a task of another backend."""
    assert find_task_job("json.dumps") is None
    with override_settings(TASKS=fixtures.IMMEDIATE):
        assert find_task_job(fixtures.calculate_meaning_of_life.module_path) is None
    assert find_task_job(fixtures.calculate_meaning_of_life.module_path) is not None


def test_the_worker_finds_the_tasks_of_queued_runs(rehearsal: Rehearsal) -> None:
    """A worker whose registry lost a declared task's job claims its runs once a look
    finds its path among the declared tasks."""
    result = fixtures.calculate_meaning_of_life.enqueue()
    registry.unregister(fixtures.calculate_meaning_of_life.module_path)
    rehearsal.advance(timedelta(0))
    result.refresh()
    assert result.return_value == 42


def test_a_tasks_job_carries_its_docstring_for_the_console() -> None:
    """The console lists jobs with their docstring's first line; a task's is its own."""
    path = fixtures.calculate_meaning_of_life.module_path
    job = registry.get(path)
    assert job.func.__doc__ == fixtures.calculate_meaning_of_life.func.__doc__
    assert registry.get(path).func is job.func


@pytest.mark.django_db
def test_the_console_offers_an_enqueued_task_next_to_the_jobs() -> None:
    """Once this process has a task's job, the schedule form lists it with the jobs."""
    fixtures.calculate_meaning_of_life.enqueue()
    offered = dict(job_options())
    assert fixtures.calculate_meaning_of_life.module_path in offered
    assert "tests.noop" in offered

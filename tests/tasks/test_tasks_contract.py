"""Django's tasks contract, restated against :class:`~django_weft.tasks.WeftBackend`.

Django's own suite (``tests/tasks/`` in its source) runs only against its built-in
backends and is not in the wheel, so its backend-agnostic cases are restated here with
its fixtures (:mod:`tests.tasks.fixtures`). Where Django's ``ImmediateBackend`` runs a
task inside ``enqueue()``, these run it on a weft worker (the driven-clock rehearsal of
``tests/conftest.py``) and read the result back. :data:`TAKEN` and
:data:`NOT_APPLICABLE` list every case of Django's four modules, and the test at the end
keeps each taken case a test here.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import transaction
from django.test import override_settings
from django.utils.module_loading import import_string

from django_weft.models import Run
from django_weft.operations import start
from django_weft.tasks import WeftBackend, WeftTask
from django_weft.tasks.framework import (
    DEFAULT_TASK_BACKEND_ALIAS,
    DEFAULT_TASK_QUEUE_NAME,
    InvalidTask,
    InvalidTaskBackend,
    Task,
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    default_task_backend,
    task,
    task_backends,
)
from django_weft.testing import Rehearsal
from tests.jobs import noop
from tests.tasks import fixtures

#: Django's cases that hold for WeftBackend: Django's module and test name -> the test
#: here that restates it.
TAKEN = {
    "test_tasks.test_using_correct_backend": "test_using_correct_backend",
    "test_tasks.test_task_decorator": "test_task_decorator",
    "test_tasks.test_enqueue_task": "test_enqueue_task",
    "test_tasks.test_enqueue_task_async": "test_enqueue_task_async",
    "test_tasks.test_enqueue_with_invalid_argument": "test_enqueue_with_invalid_argument",
    "test_tasks.test_aenqueue_with_invalid_argument": "test_aenqueue_with_invalid_argument",
    "test_tasks.test_using_priority": "test_using_priority",
    "test_tasks.test_using_queue_name": "test_using_queue_name",
    "test_tasks.test_using_run_after": "test_using_run_after",
    "test_tasks.test_using_unknown_backend": "test_using_unknown_backend",
    "test_tasks.test_using_missing_backend": "test_using_unknown_backend",
    "test_tasks.test_using_creates_new_instance": "test_using_creates_new_instance",
    "test_tasks.test_chained_using": "test_using_creates_new_instance",
    "test_tasks.test_refresh_result": "test_refresh_unchanged_result",
    "test_tasks.test_naive_datetime": "test_naive_run_after",
    "test_tasks.test_invalid_priority": "test_invalid_priority",
    "test_tasks.test_unknown_queue_name": "test_unknown_queue_name",
    "test_tasks.test_call_task": "test_call_task",
    "test_tasks.test_call_task_async": "test_call_task",
    "test_tasks.test_call_async_task": "test_call_async_task",
    "test_tasks.test_call_async_task_sync": "test_call_async_task",
    "test_tasks.test_get_result": "test_get_result",
    "test_tasks.test_get_result_async": "test_get_result_async",
    "test_tasks.test_get_missing_result": "test_get_missing_result",
    "test_tasks.test_get_incorrect_result": "test_get_incorrect_result",
    "test_tasks.test_get_incorrect_result_async": "test_get_incorrect_result",
    "test_tasks.test_invalid_function": "test_invalid_function",
    "test_tasks.test_get_backend": "test_using_correct_backend",
    "test_tasks.test_name": "test_name_and_module_path",
    "test_tasks.test_module_path": "test_name_and_module_path",
    "test_tasks.test_pickle_task": "test_pickling.test_pickle_task_and_result",
    "test_tasks.test_unpickle_arbitrary_string": "test_pickling.test_unpickle_what_is_no_task",
    "test_tasks.test_unpickle_non_task_object": "test_pickling.test_unpickle_what_is_no_task",
    "test_tasks.test_pickle_task_result": "test_pickling.test_pickle_task_and_result",
    "test_tasks.test_no_backends": "test_no_backends",
    "test_tasks.test_task_error_invalid_exception": "test_task_error_bad_class_paths",
    "test_tasks.test_task_error_unknown_module": "test_task_error_bad_class_paths",
    "test_tasks.test_takes_context_without_taking_context": (
        "test_takes_context_without_taking_context"
    ),
    "test_tasks.test_run_after_in_decorator": "test_run_after_in_decorator",
    # test_immediate_backend.py: ImmediateBackend runs a task inside enqueue(); here a
    # weft worker runs it and the result is read back.
    "test_immediate_backend.test_using_correct_backend": "test_using_correct_backend",
    "test_immediate_backend.test_enqueue_task": "test_executes_enqueued_tasks",
    "test_immediate_backend.test_enqueue_task_async": "test_executes_enqueued_tasks",
    "test_immediate_backend.test_catches_exception": "test_catches_exception",
    "test_immediate_backend.test_complex_exception": "test_complex_exception",
    "test_immediate_backend.test_complex_return_value": "test_complex_return_value",
    "test_immediate_backend.test_result": "test_result",
    "test_immediate_backend.test_result_async": "test_result_async",
    "test_immediate_backend.test_enqueue_logs": "test_logs",
    "test_immediate_backend.test_failed_logs": "test_failed_logs",
    "test_immediate_backend.test_successful_task_no_none_type_in_logs": "test_logs",
    "test_immediate_backend.test_takes_context": "test_takes_context",
    "test_immediate_backend.test_context": "test_context_attempt",
    "test_immediate_backend.test_validate_on_enqueue": "test_validate_on_enqueue",
    "test_immediate_backend.test_validate_on_aenqueue": "test_validate_on_aenqueue",
    # test_dummy_backend.py: DummyBackend stores results; weft stores runs.
    "test_dummy_backend.test_using_correct_backend": "test_using_correct_backend",
    "test_dummy_backend.test_enqueue_task": "test_enqueue_task",
    "test_dummy_backend.test_enqueue_task_async": "test_enqueue_task_async",
    "test_dummy_backend.test_get_result": "test_get_result",
    "test_dummy_backend.test_get_result_async": "test_get_result_async",
    "test_dummy_backend.test_refresh_result": "test_refresh_result",
    "test_dummy_backend.test_refresh_result_async": "test_refresh_result_async",
    "test_dummy_backend.test_get_missing_result": "test_get_missing_result",
    "test_dummy_backend.test_enqueue_logs": "test_logs",
    # test_custom_backend.py
    "test_custom_backend.test_using_correct_backend": "test_using_correct_backend",
    # Django 6.1's custom task class (@task(**kwargs) reaches the backend's task_class).
    "custom task class: default values": "test_custom_task_class_default_values",
    "custom task class: values": "test_task_class_options.test_custom_task_class_kwargs",
    "custom task class: unknown keyword": (
        "test_task_class_options.test_custom_task_class_unknown_kwarg"
    ),
}

#: Django's cases that do not apply to WeftBackend, and why.
NOT_APPLICABLE = {
    "test_tasks.test_task_result_comparability_in_priority_queue": "TaskResult ordering is "
    "newer than the Django this suite pins (6.1 has none)",
    "test_tasks.test_task_result_equality": "TaskResult equality by id is newer than 6.1",
    "test_tasks.test_task_result_equality_not_implemented": "newer than 6.1",
    "test_tasks.test_task_result_hash_equal_objects": "TaskResult hashing is newer than 6.1",
    "test_tasks.test_task_result_hash_usable_in_set": "newer than 6.1",
    "test_tasks.test_task_result_hash_usable_as_dict_key": "newer than 6.1",
    "test_tasks.test_task_result_lt_not_implemented": "newer than 6.1",
    "test_tasks.test_task_result_lt_stability": "newer than 6.1",
    "test_immediate_backend.test_throws_keyboard_interrupt": "about the calling process: "
    "ImmediateBackend re-raises it from enqueue(); a weft worker records the attempt and "
    "re-raises it in its run thread, where it stops the worker",
    "test_immediate_backend.test_cannot_get_result": "weft supports get_result",
    "test_immediate_backend.test_cannot_refresh_result": "weft supports get_result",
    "test_immediate_backend.test_cannot_pass_run_after": "weft supports run_after",
    "test_immediate_backend.test_doesnt_wait_until_transaction_commit_by_default": "weft's "
    "enqueue joins the caller's transaction: test_enqueue_commits_with_the_callers_transaction",
    "test_dummy_backend.test_clear": "DummyBackend.clear() empties its in-memory list",
    "test_dummy_backend.test_enqueue_on_commit": "ENQUEUE_ON_COMMIT was dropped before "
    "Django 6.0; weft's enqueue is in the caller's transaction instead",
    "test_dummy_backend.test_wait_until_transaction_commit": "as test_enqueue_on_commit",
    "test_dummy_backend.test_doesnt_wait_until_transaction_commit": "as test_enqueue_on_commit",
    "test_dummy_backend.test_wait_until_transaction_by_default": "as test_enqueue_on_commit",
    "test_dummy_backend.test_task_specific_enqueue_on_commit": "as test_enqueue_on_commit",
    "test_custom_backend.test_enqueue_async_task_on_non_async_backend": "weft runs async tasks",
    "test_custom_backend.test_backend_does_not_support_priority": "weft supports priority",
    "test_custom_backend.test_options": "about Django's made-up backend's own option",
    "test_custom_backend.test_no_enqueue": "about Django's made-up abstract backend",
}
"""Also a difference, not a case: Django's ``FAILED`` log line carries the exception
(``task_finished`` is sent inside ``except`` by Django's backends); weft sends it once
the outcome has committed, so the line carries none, and the traceback is in
``errors``."""


@pytest.fixture
def run_all(rehearsal: Rehearsal) -> Rehearsal:
    """The rehearsal, to run what was enqueued: ``run_all.advance(timedelta(0))``."""
    return rehearsal


def run_due(rehearsal: Rehearsal) -> None:
    rehearsal.advance(timedelta(0))


# -- test_tasks.py -------------------------------------------------------------------------


def test_using_correct_backend() -> None:
    """The default backend is weft's, and its tasks are WeftTasks."""
    backend = task_backends[DEFAULT_TASK_BACKEND_ALIAS]
    assert isinstance(backend, WeftBackend)
    assert (backend.alias, backend.options) == ("default", {})
    assert fixtures.noop_task.get_backend() is backend
    assert isinstance(fixtures.noop_task, WeftTask)
    assert isinstance(fixtures.noop_task_from_bare_decorator, WeftTask)


def test_task_decorator() -> None:
    """``@task`` and ``@task()`` both make a task on the default backend."""
    for made in (fixtures.noop_task, fixtures.noop_task_from_bare_decorator):
        assert isinstance(made, Task)
        assert made.backend == DEFAULT_TASK_BACKEND_ALIAS
        assert made.queue_name == DEFAULT_TASK_QUEUE_NAME


@pytest.mark.django_db
def test_enqueue_task() -> None:
    """Enqueue returns a READY result with its args, kwargs, backend and id."""
    result = fixtures.noop_task.enqueue(1, "two", three=3)
    assert result.status == TaskResultStatus.READY
    assert not result.is_finished
    assert (result.started_at, result.finished_at, result.last_attempted_at) == (None,) * 3
    assert result.enqueued_at is not None
    assert (result.args, result.kwargs) == ([1, "two"], {"three": 3})
    assert result.backend == DEFAULT_TASK_BACKEND_ALIAS
    assert result.task == fixtures.noop_task
    assert (result.attempts, result.worker_ids, result.errors) == (0, [], [])
    assert len(result.id) < 64
    assert Run.objects.filter(pk=result.id).exists()
    with pytest.raises(ValueError, match="Task has not finished yet"):
        result.return_value  # noqa: B018


@pytest.mark.django_db(transaction=True)
def test_enqueue_task_async() -> None:
    """``aenqueue`` writes the run too, for sync and async tasks alike."""
    for enqueued in (fixtures.noop_task, fixtures.noop_task_async):
        result = async_to_sync(enqueued.aenqueue)(1, key="value")
        assert result.status == TaskResultStatus.READY
        assert (result.args, result.kwargs) == ([1], {"key": "value"})
        assert Run.objects.filter(pk=result.id, job=enqueued.module_path).exists()


@pytest.mark.django_db
def test_enqueue_with_invalid_argument() -> None:
    """A non-JSON argument raises Django's TypeError, and nothing is written."""
    with pytest.raises(TypeError, match="Unsupported type"):
        fixtures.noop_task.enqueue(datetime.now(UTC))
    with pytest.raises(TypeError, match="Unsupported type"):
        fixtures.noop_task.enqueue(items={1, 2})
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_aenqueue_with_invalid_argument() -> None:
    with pytest.raises(TypeError, match="Unsupported type"):
        async_to_sync(fixtures.noop_task.aenqueue)(datetime.now(UTC))
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_using_priority() -> None:
    """``using(priority=)`` makes a new task; the run keeps the priority."""
    urgent = fixtures.noop_task.using(priority=100)
    assert (urgent.priority, fixtures.noop_task.priority) == (100, 0)
    result = urgent.enqueue()
    assert result.task.priority == 100
    assert Run.objects.get(pk=result.id).priority == 100
    assert fixtures.noop_task.get_result(result.id).task.priority == 100


@pytest.mark.django_db
@override_settings(
    TASKS={"default": {"BACKEND": "django_weft.tasks.WeftBackend", "QUEUES": ["default", "q1"]}}
)
def test_using_queue_name() -> None:
    elsewhere = fixtures.noop_task.using(queue_name="q1")
    result = elsewhere.enqueue()
    assert Run.objects.get(pk=result.id).queue == "q1"
    assert default_task_backend.get_result(result.id).task.queue_name == "q1"


@pytest.mark.django_db
def test_using_run_after() -> None:
    """``run_after`` is stored as enqueued and reads back."""
    later = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    result = fixtures.noop_task.using(run_after=later).enqueue()
    assert result.task.run_after == later
    assert default_task_backend.get_result(result.id).task.run_after == later


def test_using_unknown_backend() -> None:
    unknown = re.escape("The connection 'unknown' doesn't exist.")
    with pytest.raises(InvalidTaskBackend, match=unknown):
        fixtures.noop_task.using(backend="unknown")
    missing = re.escape("Could not find backend 'does.not.exist'")
    with (
        override_settings(TASKS={**settings.TASKS, "missing": {"BACKEND": "does.not.exist"}}),
        pytest.raises(InvalidTaskBackend, match=missing),
    ):
        fixtures.noop_task.using(backend="missing")


def test_using_creates_new_instance() -> None:
    """``using()`` copies, and copies of copies keep what the first changed."""
    copy = fixtures.noop_task.using()
    assert copy == fixtures.noop_task
    assert copy is not fixtures.noop_task
    later = datetime(2030, 1, 1, tzinfo=UTC)
    chained = fixtures.noop_task.using(run_after=later).using(priority=10)
    assert (chained.run_after, chained.priority) == (later, 10)
    assert isinstance(chained, WeftTask)


def test_run_after_in_decorator() -> None:
    """A TypeError naming run_after (Django 6.1 says it cannot be set statically; 6.0's
    decorator takes no such keyword)."""
    with pytest.raises(TypeError, match="run_after"):
        task(run_after=datetime.now(UTC))(fixtures.calculate_meaning_of_life.func)


@pytest.mark.django_db(transaction=True)
def test_refresh_unchanged_result() -> None:
    """Refreshing a result nothing changed gives the same fields back."""
    result = fixtures.noop_task.enqueue(1)
    original = dataclasses.asdict(result)
    result.refresh()
    assert dataclasses.asdict(result) == original
    async_to_sync(result.arefresh)()
    assert dataclasses.asdict(result) == original


@override_settings(TASKS={})
def test_no_backends() -> None:
    with pytest.raises(InvalidTaskBackend):
        fixtures.noop_task.enqueue()


@pytest.mark.parametrize("priority", [-101, 101, 3.1])
def test_invalid_priority(priority: float) -> None:
    """Django's priority range and whole numbers, kept by the backend's validation."""
    with pytest.raises(InvalidTask, match="priority must be a whole number"):
        fixtures.noop_task.using(priority=priority)  # type: ignore[arg-type]


def test_naive_run_after() -> None:
    with pytest.raises(InvalidTask, match="run_after must be an aware datetime"):
        fixtures.noop_task.using(run_after=datetime(2030, 1, 1))


@override_settings(
    TASKS={"default": {"BACKEND": "django_weft.tasks.WeftBackend", "QUEUES": ["default"]}}
)
def test_unknown_queue_name() -> None:
    with pytest.raises(InvalidTask, match="Queue 'queue-1' is not valid for backend"):
        fixtures.noop_task.using(queue_name="queue-1")


def test_invalid_function() -> None:
    """A function that is not at module level is no task (Django's own check)."""

    def inner() -> None:
        return None

    with pytest.raises(InvalidTask, match="module level"):
        task()(inner)
    with pytest.raises(InvalidTask, match="module level"):
        task()(any)
    with pytest.raises(InvalidTask, match="module level"):
        task()(lambda: None)


def test_takes_context_without_taking_context() -> None:
    with pytest.raises(InvalidTask, match="first argument of 'context'"):
        task(takes_context=True)(fixtures.calculate_meaning_of_life.func)


def test_call_task() -> None:
    """Calling a task calls its function in this process; nothing is enqueued."""
    assert fixtures.calculate_meaning_of_life.call() == 42
    assert async_to_sync(fixtures.calculate_meaning_of_life.acall)() == 42


def test_call_async_task() -> None:
    assert fixtures.noop_task_async.call() is None
    assert async_to_sync(fixtures.noop_task_async.acall)() is None


@pytest.mark.django_db
def test_get_result() -> None:
    """A result read back (as another request would) equals the one enqueue returned."""
    result = fixtures.noop_task.enqueue(1, two=2)
    for read in (
        default_task_backend.get_result(result.id),
        fixtures.noop_task.get_result(result.id),
    ):
        assert read == result
        assert read is not result


@pytest.mark.django_db(transaction=True)
def test_get_result_async() -> None:
    result = fixtures.noop_task.enqueue()
    assert async_to_sync(default_task_backend.aget_result)(result.id) == result
    assert async_to_sync(fixtures.noop_task.aget_result)(result.id) == result


@pytest.mark.django_db(transaction=True)
def test_get_missing_result() -> None:
    """A missing id, an id that is no UUID and a plain job's run are no task results."""
    plain = start(noop)
    for missing in ("00000000-0000-0000-0000-000000000000", "not-a-uuid", "", str(plain.pk)):
        with pytest.raises(TaskResultDoesNotExist):
            default_task_backend.get_result(missing)
        with pytest.raises(TaskResultDoesNotExist):
            async_to_sync(default_task_backend.aget_result)(missing)


@pytest.mark.django_db
def test_get_incorrect_result() -> None:
    result = fixtures.noop_task_async.enqueue()
    with pytest.raises(TaskResultMismatch, match="Task does not match"):
        fixtures.noop_task.get_result(result.id)


def test_name_and_module_path() -> None:
    assert fixtures.noop_task.name == "noop_task"
    assert fixtures.noop_task.module_path == "tests.tasks.fixtures.noop_task"
    assert import_string(fixtures.noop_task.module_path) is fixtures.noop_task
    assert import_string(fixtures.noop_task_async.module_path) is fixtures.noop_task_async


# -- test_immediate_backend.py: the same tasks, executed by a weft worker --------------------


def test_executes_enqueued_tasks(run_all: Rehearsal) -> None:
    """Sync and async tasks, with args and kwargs, run and succeed."""
    results = [
        fixtures.noop_task.enqueue(1, two=2),
        fixtures.noop_task_async.enqueue(1, two=2),
        fixtures.calculate_meaning_of_life.enqueue(),
    ]
    run_due(run_all)
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL
        assert result.is_finished
        assert result.started_at is not None
        assert result.finished_at is not None
        assert result.last_attempted_at == result.started_at <= result.finished_at
        assert (result.attempts, result.errors) == (1, [])
    assert [result.return_value for result in results] == [None, None, 42]


@pytest.mark.parametrize(
    ("failing", "exception", "message"),
    [
        (fixtures.failing_task_value_error, ValueError, "This task failed due to ValueError"),
        (fixtures.failing_task_system_exit, SystemExit, "This task failed due to SystemExit"),
        (fixtures.exit_task, SystemExit, "1"),
    ],
)
def test_catches_exception(
    run_all: Rehearsal, failing: Task, exception: type[BaseException], message: str
) -> None:
    """An exception (SystemExit too) fails the task, its class and traceback kept; the
    worker lives on."""
    result = failing.enqueue()
    run_due(run_all)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value  # noqa: B018
    [error] = result.errors
    assert error.exception_class is exception
    assert error.traceback.endswith(f"{exception.__name__}: {message}\n")
    assert result.finished_at is not None
    later = fixtures.calculate_meaning_of_life.enqueue()
    run_due(run_all)
    later.refresh()
    assert later.return_value == 42


def test_complex_exception(run_all: Rehearsal) -> None:
    result = fixtures.complex_exception.enqueue()
    run_due(run_all)
    result.refresh()
    [error] = result.errors
    assert error.exception_class is ValueError
    assert 'ValueError(ValueError("This task failed"))' in error.traceback
    assert error.traceback.endswith("ValueError: This task failed\n")


def test_task_error_bad_class_paths(run_all: Rehearsal) -> None:
    """A path that names no exception, or no module, does not resolve."""
    result = fixtures.failing_task_value_error.enqueue()
    run_due(run_all)
    result.refresh()
    [error] = result.errors
    object.__setattr__(error, "exception_class_path", "subprocess.run")
    bad = re.escape("'subprocess.run' does not reference a valid exception")
    with pytest.raises(ValueError, match=bad):
        error.exception_class  # noqa: B018
    object.__setattr__(error, "exception_class_path", "does.not.exist")
    with pytest.raises(ImportError):
        error.exception_class  # noqa: B018


def test_complex_return_value(run_all: Rehearsal) -> None:
    """A return value that is not JSON fails the attempt with Django's TypeError."""
    result = fixtures.complex_return_value.enqueue()
    run_due(run_all)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class is TypeError
    assert "Unsupported type" in error.traceback


def test_result(run_all: Rehearsal) -> None:
    result = fixtures.calculate_meaning_of_life.enqueue()
    run_due(run_all)
    read = default_task_backend.get_result(result.id)
    assert read.status == TaskResultStatus.SUCCESSFUL
    assert read.return_value == 42
    assert read.worker_ids == [str(run_all.worker.process.pk)]  # type: ignore[union-attr]


def test_result_async(run_all: Rehearsal) -> None:
    result = async_to_sync(fixtures.calculate_meaning_of_life.aenqueue)()
    run_due(run_all)
    read = async_to_sync(fixtures.calculate_meaning_of_life.aget_result)(result.id)
    assert read.return_value == 42


def test_refresh_result(run_all: Rehearsal) -> None:
    result = fixtures.calculate_meaning_of_life.enqueue()
    run_due(run_all)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 42


def test_refresh_result_async(run_all: Rehearsal) -> None:
    result = fixtures.calculate_meaning_of_life.enqueue()
    run_due(run_all)
    async_to_sync(result.arefresh)()
    assert result.return_value == 42


def test_takes_context(run_all: Rehearsal) -> None:
    """A takes_context task gets the TaskContext: the result's id as this attempt's."""
    result = fixtures.get_task_id.enqueue()
    run_due(run_all)
    result.refresh()
    assert result.return_value == result.id


def test_context_attempt(run_all: Rehearsal) -> None:
    """The context's attempt counts from 1."""
    result = fixtures.test_context.enqueue(attempt=1)
    run_due(run_all)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors


@pytest.mark.django_db
def test_validate_on_enqueue() -> None:
    """A task made valid, then enqueued under a configuration that refuses its queue."""
    queued_elsewhere = fixtures.noop_task.using(queue_name="unknown_queue")
    with (
        override_settings(
            TASKS={"default": {"BACKEND": "django_weft.tasks.WeftBackend", "QUEUES": ["queue-1"]}}
        ),
        pytest.raises(InvalidTask, match="Queue 'unknown_queue' is not valid for backend"),
    ):
        queued_elsewhere.enqueue()
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_validate_on_aenqueue() -> None:
    queued_elsewhere = fixtures.noop_task.using(queue_name="unknown_queue")
    with (
        override_settings(
            TASKS={"default": {"BACKEND": "django_weft.tasks.WeftBackend", "QUEUES": ["queue-1"]}}
        ),
        pytest.raises(InvalidTask, match="Queue 'unknown_queue' is not valid for backend"),
    ):
        async_to_sync(queued_elsewhere.aenqueue)()
    assert not Run.objects.exists()


def test_logs(run_all: Rehearsal, caplog: pytest.LogCaptureFixture) -> None:
    """Django's log lines: enqueued (debug), RUNNING and SUCCESSFUL (info)."""
    with caplog.at_level(logging.DEBUG, logger=fixtures.LOGGER):
        result = fixtures.noop_task.enqueue()
        run_due(run_all)
    lines = [r.getMessage() for r in caplog.records if r.name == fixtures.LOGGER]
    path = fixtures.noop_task.module_path
    assert lines == [
        f"Task id={result.id} path={path} enqueued backend=default",
        f"Task id={result.id} path={path} state=RUNNING",
        f"Task id={result.id} path={path} state=SUCCESSFUL",
    ]
    assert not any("NoneType" in line for line in lines)


def test_failed_logs(run_all: Rehearsal, caplog: pytest.LogCaptureFixture) -> None:
    """A failed task logs FAILED at ERROR level."""
    with caplog.at_level(logging.DEBUG, logger=fixtures.LOGGER):
        result = fixtures.failing_task_value_error.enqueue()
        run_due(run_all)
    [finished] = [
        r for r in caplog.records if r.name == fixtures.LOGGER and "FAILED" in r.getMessage()
    ]
    assert finished.levelno == logging.ERROR
    assert finished.getMessage() == (
        f"Task id={result.id} path={fixtures.failing_task_value_error.module_path} state=FAILED"
    )


def test_check() -> None:
    """A correct configuration has nothing to say."""
    assert default_task_backend.check() == []


# -- test_dummy_backend.py ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_enqueue_commits_with_the_callers_transaction() -> None:
    """A run enqueued in atomic() exists once it commits, and not at all if it rolls back."""
    with transaction.atomic():
        kept = fixtures.noop_task.enqueue()
    assert Run.objects.filter(pk=kept.id).exists()

    class RolledBack(Exception):
        pass

    dropped = []
    with pytest.raises(RolledBack), transaction.atomic():  # noqa: PT012
        dropped.append(fixtures.noop_task.enqueue())
        raise RolledBack
    [dropped_result] = dropped
    assert not Run.objects.filter(pk=dropped_result.id).exists()
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(dropped_result.id)


# -- test_custom_backend.py: task_class with extra fields (Django 6.1) ------------------------


def test_custom_task_class_default_values() -> None:
    """WeftTask's options default to nothing."""
    made = fixtures.noop_task
    assert isinstance(made, WeftTask)
    assert (made.retry, made.timeout, made.concurrency, made.state) == (None,) * 4
    assert made.private_args == ()


def test_every_django_case_is_accounted_for() -> None:
    """Each taken case names a test (of this module, or ``module.test`` of a sibling kept
    apart for the Django versions that have what it needs); none is also set aside."""
    folder = Path(__file__).parent
    for taken in TAKEN.values():
        module, _, name = taken.rpartition(".")
        source = (folder / f"{module or Path(__file__).stem}.py").read_text(encoding="utf-8")
        assert f"def {name}(" in source, taken
    assert not set(TAKEN) & set(NOT_APPLICABLE)
    assert len(TAKEN) + len(NOT_APPLICABLE) >= 85, "Django's four modules hold 85 cases"

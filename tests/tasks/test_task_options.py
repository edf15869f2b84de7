"""What weft adds to a task: ``WeftTask``'s options, the backend's ``OPTIONS`` and its
system checks, concurrency limits and private args."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings

from django_weft.exceptions import ConcurrencyLimitReached, InvalidArgs, Throttled
from django_weft.jobs.limits import Limit
from django_weft.jobs.registry import registry
from django_weft.jobs.retries import Retry
from django_weft.live.projections import guest_run
from django_weft.models import Run
from django_weft.tasks.framework import (
    InvalidTask,
    TaskResultStatus,
    default_task_backend,
    task_backends,
)
from django_weft.testing import Rehearsal
from tests.tasks import fixtures, weft_fixtures
from tests.tasks.weft_fixtures import weft_task


def weft_backend(**options: Any) -> dict[str, Any]:
    """A ``TASKS`` setting with one WeftBackend and these OPTIONS."""
    return {"default": {"BACKEND": "django_weft.tasks.WeftBackend", "OPTIONS": options}}


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"timeout": 0}, "timeout"),
        ({"timeout": "soon"}, "timeout"),
        ({"retry": 3}, "retry"),
        ({"concurrency": 0}, "concurrency"),
        ({"concurrency": True}, "concurrency"),
        ({"debounce": 30}, "debounce must be a positive timedelta"),
        ({"throttle": timedelta(0)}, "throttle must be a positive timedelta"),
        ({"limits": [5]}, "limits must be a list of django_weft.Limit"),
        (
            {"limits": [Limit(concurrency=1, per_key=True)]},
            "a limit per key needs a concurrency_key",
        ),
        ({"concurrency": 1, "concurrency_key": "k"}, "concurrency_key must be a callable"),
        ({"state": {"name": "x"}}, "state"),
        ({"private_args": "secret"}, "private_args"),
    ],
)
def test_bad_option_is_invalid_task_naming_it(options: dict[str, Any], named: str) -> None:
    """A bad weft option fails where the task is defined, naming the option."""
    with pytest.raises(InvalidTask, match=named):
        weft_task(**options)(fixtures.noop_task.func)


def test_good_options_make_a_weft_task_whose_job_has_them() -> None:
    """The options reach the job the worker runs the task as."""
    retry = Retry(max_attempts=5)
    made = weft_task(retry=retry, timeout=2.5, concurrency=3)(fixtures.noop_task.func)
    job = task_backends["default"].job_for(made)  # type: ignore[attr-defined]
    assert (job.retry, job.timeout, job.concurrency) == (retry, 2.5, 3)
    assert job.name == made.module_path


def test_flow_control_options_reach_the_job() -> None:
    """``limits``, ``debounce`` and ``throttle`` are the job's, as ``@job`` takes them:
    a limit without a name is named after the task."""
    key = weft_fixtures.account_of
    made = weft_task(
        concurrency_key=key,
        limits=[Limit(concurrency=2, per_key=True)],
        debounce=timedelta(seconds=5),
    )(fixtures.noop_task.func)
    job = task_backends["default"].job_for(made)  # type: ignore[attr-defined]
    assert job.limits == (Limit(made.module_path, concurrency=2, per_key=True),)
    assert (job.debounce, job.throttle, job.concurrency_key) == (timedelta(seconds=5), None, key)


@pytest.mark.django_db
def test_a_debounced_tasks_burst_of_enqueues_is_one_run_with_the_last_args() -> None:
    first = weft_fixtures.reindex.enqueue("acme", 1)
    last = weft_fixtures.reindex.enqueue("acme", 5)
    other = weft_fixtures.reindex.enqueue("globex", 2)
    assert first.id == last.id != other.id
    assert Run.objects.get(pk=first.id).args == {"args": ["acme", 5], "kwargs": {}}
    assert Run.objects.count() == 2


@pytest.mark.django_db
def test_a_throttled_tasks_second_enqueue_is_refused_saying_when() -> None:
    weft_fixtures.ping.enqueue("acme")
    with pytest.raises(Throttled, match="the next may start at"):
        weft_fixtures.ping.enqueue("acme")
    weft_fixtures.ping.enqueue("globex")
    assert Run.objects.count() == 2


@pytest.mark.django_db
def test_concurrency_limit_refuses_the_enqueue_and_writes_nothing() -> None:
    weft_fixtures.one_at_a_time.enqueue("first")
    with pytest.raises(ConcurrencyLimitReached, match="allows 1 unfinished run"):
        weft_fixtures.one_at_a_time.enqueue("second")
    assert Run.objects.count() == 1


@pytest.mark.django_db
def test_arguments_that_do_not_bind_are_refused_on_enqueue() -> None:
    """A call that cannot bind to the function would fail every attempt: refused at once."""
    with pytest.raises(InvalidArgs, match="args: missing a required argument: 'label'"):
        weft_fixtures.one_at_a_time.enqueue()
    with pytest.raises(InvalidArgs, match="unexpected keyword argument 'extra'"):
        weft_fixtures.one_at_a_time.enqueue("x", extra=1)
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_private_args_are_hidden_from_guests() -> None:
    """By name and by position: a guest sees neither."""
    by_name = weft_fixtures.with_secret.enqueue("visible", secret="hunter2")
    by_position = weft_fixtures.with_secret.enqueue("visible", "hunter2")
    for result in (by_name, by_position):
        seen = guest_run(Run.objects.select_related("owner", "schedule").get(pk=result.id))
        assert "hunter2" not in str(seen)
        assert seen["args"]["args"] == ["visible"]


def test_backend_options_set_retry_and_timeout_for_every_task(rehearsal: Rehearsal) -> None:
    """On Django 6.0 OPTIONS is where a backend's tasks get a retry policy and a timeout."""
    retry = Retry(max_attempts=2, backoff=60, factor=1, jitter=0)
    with override_settings(TASKS=weft_backend(retry=retry, timeout=9)):
        result = fixtures.failing_task_value_error.enqueue()
        job = registry.get(fixtures.failing_task_value_error.module_path)
        assert (job.retry, job.timeout) == (retry, 9)
        rehearsal.advance(timedelta(0))
        result.refresh()
        assert result.status == TaskResultStatus.READY, "retried under the backend's policy"
        rehearsal.advance(timedelta(minutes=1))
        result.refresh()
        assert result.status == TaskResultStatus.FAILED
        assert len(result.errors) == 2


def test_a_correct_configuration_passes_the_checks() -> None:
    assert default_task_backend.check() == []
    with override_settings(TASKS=weft_backend(retry=Retry(), timeout=1)):
        assert task_backends["default"].check() == []


@pytest.mark.parametrize(
    ("options", "check_id", "words"),
    [
        ({"retries": 3}, "django_weft.E050", "unknown OPTIONS key 'retries'"),
        ({"timeout": -1}, "django_weft.E051", "timeout must be a positive number"),
        ({"retry": {"max_attempts": 2}}, "django_weft.E051", "retry must be a django_weft.Retry"),
    ],
)
def test_bad_options_are_system_check_errors(
    options: dict[str, Any], check_id: str, words: str
) -> None:
    with override_settings(TASKS=weft_backend(**options)):
        [error] = task_backends["default"].check()
    assert error.id == check_id
    assert words in error.msg
    assert 'TASKS["default"]' in error.msg


def test_missing_app_is_a_system_check_error() -> None:
    """The backend needs the app's models: without it in INSTALLED_APPS, E052."""
    installed = ["django.contrib.auth", "django.contrib.contenttypes"]
    with override_settings(INSTALLED_APPS=installed):
        [error] = task_backends["default"].check()
    assert error.id == "django_weft.E052"
    assert "INSTALLED_APPS" in error.msg

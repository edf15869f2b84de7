"""Errors keep the importable path of their class, for runs and for attempts.

A ``django.tasks`` result names an error by the path its ``exception_class`` imports;
weft stored only the class name before ``0011_error_class_path``. The path is recorded
for every error now (the run's latest, each retried attempt's, weft's own lost and
timeout errors), and a row written before it reads as ``builtins.<name>``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from django_weft.exceptions import RunAborted, RunLost, RunProcessDied, RunTimedOut, UnknownJob
from django_weft.jobs.registry import registry
from django_weft.jobs.tracebacks import WEFT_ERRORS, ErrorRecord, class_path_of, record_error
from django_weft.models import Attempt, Run
from django_weft.operations import start
from django_weft.testing import Rehearsal


class ProjectError(Exception):
    """Defined here, so its path is this module's."""

    class Nested(Exception):
        pass


def test_record_error_keeps_the_class_path() -> None:
    assert record_error(ValueError("x")).class_path == "builtins.ValueError"
    assert record_error(ProjectError("x")).class_path == f"{__name__}.ProjectError"
    assert record_error(ProjectError.Nested()).class_path == f"{__name__}.ProjectError.Nested"


def test_weft_errors_name_importable_classes() -> None:
    """The errors weft records for what no exception raised stand for real classes."""
    assert ErrorRecord("WorkerLost", "gone", "").class_path == "django_weft.exceptions.RunLost"
    assert ErrorRecord("Timeout", "slow", "").class_path == "django_weft.exceptions.RunTimedOut"
    assert ErrorRecord("WorkerStopped", "stop", "").class_path == (
        "django_weft.exceptions.RunAborted"
    )
    assert ErrorRecord("ProcessDied", "killed", "").class_path == (
        "django_weft.exceptions.RunProcessDied"
    )
    classes = {
        "RunLost": RunLost,
        "RunTimedOut": RunTimedOut,
        "RunAborted": RunAborted,
        "RunProcessDied": RunProcessDied,
    }
    for path in WEFT_ERRORS.values():
        module, _, name = path.rpartition(".")
        assert module == "django_weft.exceptions"
        assert name in {*classes, UnknownJob.__name__}
    assert issubclass(RunTimedOut, TimeoutError)


def test_rows_from_before_read_as_builtins_where_that_exists() -> None:
    assert class_path_of("ValueError") == "builtins.ValueError"
    assert class_path_of("KeyboardInterrupt") == "builtins.KeyboardInterrupt"
    assert class_path_of("Flaky") == ""
    assert class_path_of("print") == "", "a built-in that is no exception"


@pytest.mark.django_db(transaction=True)
def test_run_and_retried_attempts_record_the_path(rehearsal: Rehearsal) -> None:
    """Each retried attempt keeps its path; the claim clears the run's for the next."""
    run = start(registry.get("tests.flaky"))
    rehearsal.advance(timedelta(0))
    waiting = Run.objects.get(pk=run.pk)
    assert waiting.error_class_path == "builtins.ConnectionError"
    rehearsal.advance(timedelta(minutes=1))
    assert list(
        Attempt.objects.filter(run_id=run.pk).values_list("number", "error_class_path")
    ) == [(1, "builtins.ConnectionError"), (2, "builtins.ConnectionError")]
    rehearsal.advance(timedelta(minutes=2))
    done = Run.objects.get(pk=run.pk)
    assert (done.status, done.error_class_path) == ("done", "")


@pytest.mark.django_db(transaction=True)
def test_a_failed_run_records_the_path(rehearsal: Rehearsal) -> None:
    run = start(registry.get("tests.broken"))
    rehearsal.advance(timedelta(0))
    failed = Run.objects.get(pk=run.pk)
    assert (failed.error_type, failed.error_class_path) == ("RuntimeError", "builtins.RuntimeError")

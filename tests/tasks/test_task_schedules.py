"""Schedules fire tasks: a schedule's job may be a task's path, its args
``{"args": [...], "kwargs": {...}}`` bound to the function when the schedule is saved."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from django_weft.engine.schedules.saving import save_schedule
from django_weft.models import Run, Schedule
from django_weft.tasks.framework import TaskResultStatus, default_task_backend
from django_weft.testing import Rehearsal
from tests.tasks import fixtures, weft_fixtures

HOUR = timedelta(hours=1)


def test_a_scheduled_task_fires_and_its_result_reads_back(rehearsal: Rehearsal) -> None:
    """Each fire is a task run: its result reads back through get_result."""
    save_schedule(
        Schedule(
            name="meaning",
            job=fixtures.test_context.module_path,
            args={"kwargs": {"attempt": 1}},
            every=HOUR,
        )
    )
    rehearsal.advance(HOUR)
    run = Run.objects.get(schedule__name="meaning")
    result = default_task_backend.get_result(str(run.pk))
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    assert (result.args, result.kwargs) == ([], {"attempt": 1})
    assert result.backend == "default"
    assert fixtures.test_context.get_result(str(run.pk)) == result


def test_a_scheduled_task_with_positional_args_and_a_retry(rehearsal: Rehearsal) -> None:
    """Positional args are stored as given; the task's retry policy holds for fires too."""
    save_schedule(
        Schedule(name="flaky", job=weft_fixtures.flaky.module_path, args={"args": [2]}, every=HOUR)
    )
    rehearsal.advance(HOUR + timedelta(minutes=1))
    run = Run.objects.get(schedule__name="flaky")
    result = weft_fixtures.flaky.get_result(str(run.pk))
    assert result.return_value == 2
    assert result.attempts == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({}, "missing a required argument: 'attempt'"),
        ({"kwargs": {"attempt": 1, "other": 2}}, "unexpected keyword argument 'other'"),
        ({"args": [1, 2]}, "too many positional arguments"),
        ({"attempt": 1}, 'Expected {"args": [...], "kwargs": {...}}'),
        ({"args": "1"}, 'Expected {"args": [...], "kwargs": {...}}'),
    ],
)
def test_schedule_args_that_do_not_bind_are_refused_naming_args(
    args: dict[str, object], words: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        save_schedule(
            Schedule(name="bad", job=fixtures.test_context.module_path, args=args, every=HOUR)
        )
    assert set(refused.value.message_dict) == {"args"}
    assert words in " ".join(refused.value.message_dict["args"])
    assert not Schedule.objects.exists()


@pytest.mark.django_db
def test_a_path_that_names_no_task_is_an_unknown_job() -> None:
    """A module path that is no task (or does not import) is refused as the job."""
    for path in ("tests.tasks.fixtures.nothing_here", "tests.tasks.nowhere.task", "json.dumps"):
        with pytest.raises(ValidationError) as refused:
            save_schedule(Schedule(name="bad", job=path, every=HOUR))
        assert set(refused.value.message_dict) == {"job"}

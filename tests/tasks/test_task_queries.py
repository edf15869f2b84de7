"""What enqueueing and reading a result cost, in queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from django_weft.engine.limits import fairness
from django_weft.operations import start
from django_weft.tasks.framework import default_task_backend
from django_weft.testing import Rehearsal
from tests.jobs import noop
from tests.tasks import fixtures, weft_fixtures


@pytest.mark.django_db
def test_enqueue_costs_what_starting_an_equivalent_job_costs() -> None:
    """A task's enqueue is a job's start: the same statements, nothing more."""
    fixtures.noop_task.enqueue()  # its job registered; the job's module is imported
    start(noop)
    # Each count reads the fair shares afresh (a process reads them once a second).
    fairness.forget()
    with CaptureQueriesContext(connection) as started:
        start(noop)
    fairness.forget()
    with CaptureQueriesContext(connection) as enqueued:
        fixtures.noop_task.enqueue()
    assert len(enqueued) == len(started)


def test_get_result_reads_at_most_two_queries(rehearsal: Rehearsal) -> None:
    """One for the run; one for its attempts only when it was tried more than once."""
    once = fixtures.calculate_meaning_of_life.enqueue()
    thrice = weft_fixtures.flaky.enqueue(succeed_on=3)
    rehearsal.advance(timedelta(minutes=2))
    with CaptureQueriesContext(connection) as reading_once:
        assert default_task_backend.get_result(once.id).attempts == 1
    with CaptureQueriesContext(connection) as reading_thrice:
        assert default_task_backend.get_result(thrice.id).attempts == 3
    assert len(reading_once) == 1
    assert len(reading_thrice) == 2


@pytest.mark.django_db
def test_a_result_holds_the_task_itself_unless_enqueued_with_other_options() -> None:
    """A run enqueued with the task's own options reads back with that very task (no
    copy made and validated again per read and per attempt); one enqueued through
    ``using()`` with a copy that has the options it was enqueued with."""
    plain = default_task_backend.get_result(fixtures.noop_task.enqueue().id)
    assert plain.task is fixtures.noop_task
    urgent = fixtures.noop_task.using(priority=10)
    copied = default_task_backend.get_result(urgent.enqueue().id)
    assert copied.task is not fixtures.noop_task
    assert copied.task == urgent

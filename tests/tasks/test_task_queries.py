"""What enqueueing and reading a result cost, in queries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

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
    with CaptureQueriesContext(connection) as started:
        start(noop)
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

"""Pickling tasks and results (Django 6.1 made them picklable), WeftTask's options included.

Collected only where ``Task`` can be pickled (``tests/tasks/conftest.py``).
"""

from __future__ import annotations

import pickle

import pytest

from django_weft.jobs.retries import Retry
from django_weft.tasks import WeftTask
from tests.tasks import fixtures, weft_fixtures


@pytest.mark.django_db
def test_pickle_task_and_result() -> None:
    """Tasks and results survive pickling (Django 6.1), weft's options included."""
    for made in (fixtures.noop_task, fixtures.noop_task.using(priority=5)):
        assert pickle.loads(pickle.dumps(made)) == made
    result = fixtures.noop_task.enqueue(1)
    assert pickle.loads(pickle.dumps(result)) == result


def test_unpickle_what_is_no_task() -> None:
    with pytest.raises(ValueError, match="to point to a Task instance"):
        WeftTask._reconstruct({"func": "does.not.exist.fake_task"})
    with pytest.raises(ValueError, match="to point to a Task instance"):
        WeftTask._reconstruct({"func": "builtins.any"})


def test_weft_options_survive_pickling() -> None:
    """A task with a retry policy and a timeout comes back with them."""
    made = weft_fixtures.bounded
    again = pickle.loads(pickle.dumps(made))
    assert again == made
    assert (again.retry, again.timeout) == (Retry(max_attempts=2, backoff=0, jitter=0), 30)

"""The retry policy: how many attempts, how long between them, and for what outcomes."""

from __future__ import annotations

import random

import pytest

from django_weft.exceptions import InvalidArgs
from django_weft.jobs.registry import Job
from django_weft.jobs.retries import Retry, exponential_delay


def test_retry_delay_grows_exponentially_and_is_capped() -> None:
    """The wait doubles from attempt to attempt and stops growing at max_backoff."""
    policy = Retry(max_attempts=10, backoff=2, factor=2, max_backoff=20, jitter=0)
    assert [policy.delay(attempt) for attempt in range(1, 6)] == [2, 4, 8, 16, 20]


def test_retry_delay_jitter_stays_within_its_fraction() -> None:
    """With jitter 0.25 every wait lies within 25% of the base, and the waits differ."""
    policy = Retry(backoff=100, jitter=0.25)
    rng = random.Random(7)
    delays = [policy.delay(1, rng) for _ in range(200)]
    assert all(75 <= delay <= 125 for delay in delays)
    assert len(set(delays)) > 100


def test_retry_retries_only_its_outcomes_and_attempts() -> None:
    """failed and lost are retried while attempts remain; aborted and done never are."""
    policy = Retry(max_attempts=3)
    assert policy.retries("failed", 1, ValueError)
    assert policy.retries("lost", 2, None)
    assert not policy.retries("failed", 3, ValueError), "the last attempt is not retried"
    assert not policy.retries("aborted", 1, None)
    assert not policy.retries("done", 1, None)
    only_lost = Retry(max_attempts=3, on=frozenset({"lost"}))
    assert not only_lost.retries("failed", 1, ValueError)
    assert only_lost.retries("lost", 1, None)


def test_retry_never_retries_the_exception_types_it_names() -> None:
    """An exception type in ``never`` (or a subclass of one) fails at once."""
    policy = Retry(max_attempts=5, never=(LookupError,))
    assert not policy.retries("failed", 1, KeyError)
    assert policy.retries("failed", 1, ValueError)


def test_job_never_retries_args_that_do_not_decode() -> None:
    """Args that fail the job's serializer fail the same way at every attempt."""
    retried = Job(func=lambda ctx: None, name="retried", retry=Retry(max_attempts=5))
    assert not retried.retries("failed", 1, InvalidArgs)
    assert retried.retries("failed", 1, ValueError)
    assert not Job(func=lambda ctx: None, name="plain").retries("failed", 1, ValueError)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be at least 1"),
        ({"backoff": -1}, "backoff and max_backoff must be zero or more"),
        ({"factor": 0.5}, "factor must be at least 1"),
        ({"jitter": 2}, "jitter must be a fraction from 0 to 1"),
        ({"on": frozenset({"aborted"})}, "retries failed and lost outcomes, not aborted"),
    ],
)
def test_retry_refuses_a_policy_that_makes_no_sense(
    arguments: dict[str, object], message: str
) -> None:
    """A bad policy fails where the job is defined, naming what is wrong."""
    with pytest.raises(ValueError, match=message):
        Retry(**arguments)  # type: ignore[arg-type]


def test_exponential_delay_is_shared_by_database_back_off() -> None:
    """The worker's back-off from an outage uses the same curve, capped."""
    assert [exponential_delay(step, 0.05, 2, 2.0, 0) for step in (1, 2, 3, 10)] == [
        0.05,
        0.1,
        0.2,
        2.0,
    ]

"""Tasks that use what weft adds to Django's tasks: retries, timeouts, limits, private args."""

from __future__ import annotations

from django_weft.jobs.retries import Retry
from django_weft.tasks.framework import TaskContext, task

#: One minute between attempts, no jitter: a driven clock lands on each retry exactly.
EVERY_MINUTE = Retry(max_attempts=3, backoff=60, factor=1, jitter=0)


class Flaky(Exception):
    """An error of the project's own, so that its class path is not a built-in's."""


@task(takes_context=True, retry=EVERY_MINUTE)
def flaky(context: TaskContext, succeed_on: int) -> int:
    """Fails with :class:`Flaky` until attempt ``succeed_on``, then returns the attempt."""
    if context.attempt < succeed_on:
        raise Flaky(f"attempt {context.attempt} failed")
    return context.attempt


@task(concurrency=1)
def one_at_a_time(label: str) -> str:
    return label


@task(private_args=("secret",))
def with_secret(label: str, secret: str) -> str:
    return label


@task(timeout=30, retry=Retry(max_attempts=2, backoff=0, jitter=0))
def bounded(label: str) -> str:
    return label

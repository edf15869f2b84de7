"""Tasks that use what weft adds to Django's tasks: retries, timeouts, limits, private
args, debounce and throttle."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django_weft.jobs.retries import Retry
from django_weft.tasks import WeftTask
from django_weft.tasks.framework import (
    DEFAULT_TASK_BACKEND_ALIAS,
    DEFAULT_TASK_QUEUE_NAME,
    TaskContext,
)


def weft_task(**options: Any) -> Callable[[Callable[..., Any]], WeftTask]:
    """``@task(**options)`` as Django 6.1 reads it, made directly so that it works on
    Django 6.0 too (whose ``task()`` takes no extra keywords, and whose ``Task`` fields
    have no defaults)."""
    made = {
        "priority": 0,
        "backend": DEFAULT_TASK_BACKEND_ALIAS,
        "queue_name": DEFAULT_TASK_QUEUE_NAME,
        "run_after": None,
        **options,
    }

    def decorate(func: Callable[..., Any]) -> WeftTask:
        return WeftTask(func=func, **made)

    return decorate


#: One minute between attempts, no jitter: a driven clock lands on each retry exactly.
EVERY_MINUTE = Retry(max_attempts=3, backoff=60, factor=1, jitter=0)


class Flaky(Exception):
    """An error of the project's own, so that its class path is not a built-in's."""


@weft_task(takes_context=True, retry=EVERY_MINUTE)
def flaky(context: TaskContext, succeed_on: int) -> int:
    """Fails with :class:`Flaky` until attempt ``succeed_on``, then returns the attempt."""
    if context.attempt < succeed_on:
        raise Flaky(f"attempt {context.attempt} failed")
    return context.attempt


@weft_task(concurrency=1)
def one_at_a_time(label: str) -> str:
    return label


@weft_task(private_args=("secret",))
def with_secret(label: str, secret: str) -> str:
    return label


@weft_task(timeout=30, retry=Retry(max_attempts=2, backoff=0, jitter=0))
def bounded(label: str) -> str:
    return label


def account_of(args: Any, owner: Any) -> str:
    """A task's key: its first argument (``args`` is ``{"args": [...], "kwargs": {...}}``)."""
    return str(args["args"][0])


@weft_task(concurrency_key=account_of, debounce=timedelta(seconds=30))
def reindex(account: str, changes: int) -> str:
    """Debounced: a burst of a key's enqueues is one run, with the last one's args."""
    return f"{account}: {changes}"


@weft_task(concurrency_key=account_of, throttle=timedelta(minutes=1))
def ping(account: str) -> str:
    """Throttled: at most one enqueue of an account a minute."""
    return account

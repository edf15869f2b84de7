"""What a task may ask of weft besides Django's own options: :class:`WeftTask`.

Django 6.1's ``@task(**kwargs)`` hands extra keywords to its backend's ``task_class``;
``WeftBackend.task_class`` is :class:`WeftTask`, whose fields are what a weft job can
declare (``retry``, ``timeout``, ``concurrency``, ``concurrency_key``, ``limits``,
``debounce``, ``throttle``, ``state``, ``private_args``). On Django 6.0 a backend's
``OPTIONS`` may set ``retry`` and ``timeout`` for all of its tasks. Each value is
checked here, and a bad one is an ``InvalidTask`` that names the option, so the mistake
shows where the task is defined.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django_weft.jobs.limits import Limit, named_limits
from django_weft.jobs.registry import ConcurrencyKey, StateSpec
from django_weft.jobs.retries import Retry
from django_weft.tasks.framework import InvalidTask, Task

if TYPE_CHECKING:
    from django_weft.tasks.framework import AnyTask

#: The keys a ``WeftBackend``'s ``OPTIONS`` may hold.
BACKEND_OPTIONS = frozenset({"retry", "timeout"})


@dataclass(frozen=True, slots=True, kw_only=True)
class WeftTask(Task):  # type: ignore[type-arg]  # generic in the stubs only
    """A ``django.tasks.Task`` with weft's options (all optional, all checked on creation).

    ``retry`` (a :class:`~django_weft.jobs.retries.Retry`) allows more attempts,
    ``timeout`` (seconds) stops an attempt that runs that long, ``concurrency`` limits the
    unfinished runs (per ``concurrency_key``, called with the stored
    ``{"args": [...], "kwargs": {...}}`` and the owner), ``limits`` (flow limits'
    defaults, :class:`~django_weft.jobs.limits.Limit`) keep runs queued across the
    cluster, ``debounce`` and ``throttle`` pace enqueues per key (see
    docs/flow-control.md), ``state`` gives each run a state document, and
    ``private_args`` names the arguments a guest of the live views does not see.
    """

    retry: Retry | None = None
    timeout: float | None = None
    concurrency: int | None = None
    concurrency_key: ConcurrencyKey | None = None
    limits: Sequence[Limit] = ()
    debounce: timedelta | None = None
    throttle: timedelta | None = None
    state: StateSpec | None = None
    private_args: Sequence[str] = ()


def option_problems(task: AnyTask) -> Iterator[str]:
    """What is wrong with ``task``'s weft options, each naming the option."""
    if not isinstance(task, WeftTask):
        return
    yield from retry_problems(task.retry)
    yield from timeout_problems(task.timeout)
    concurrency = task.concurrency
    if concurrency is not None and (
        not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1
    ):
        yield f"concurrency must be a positive number of runs, not {concurrency!r}"
    if task.concurrency_key is not None and not callable(task.concurrency_key):
        yield f"concurrency_key must be a callable, not {task.concurrency_key!r}"
    yield from limit_problems(task)
    for name in ("debounce", "throttle"):
        value = getattr(task, name)
        if value is not None and (not isinstance(value, timedelta) or value <= timedelta(0)):
            yield f"{name} must be a positive timedelta, not {value!r}"
    if task.state is not None and not isinstance(task.state, StateSpec):
        yield f"state must be a django_weft.StateSpec, not {task.state!r}"
    private = task.private_args
    if isinstance(private, str) or not all(isinstance(name, str) for name in private):
        yield f"private_args must be a sequence of argument names, not {private!r}"


def limit_problems(task: WeftTask) -> Iterator[str]:
    limits = task.limits
    if isinstance(limits, str | Limit) or not all(isinstance(one, Limit) for one in limits):
        yield f"limits must be a list of django_weft.Limit, not {limits!r}"
        return
    try:
        named_limits(task.module_path, limits, keyed=task.concurrency_key is not None)
    except ValueError as error:
        yield f"limits: {error}"


def retry_problems(retry: object) -> Iterator[str]:
    if retry is not None and not isinstance(retry, Retry):
        yield f"retry must be a django_weft.Retry, not {retry!r}"


def timeout_problems(timeout: object) -> Iterator[str]:
    if timeout is not None and (
        not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0
    ):
        yield f"timeout must be a positive number of seconds, not {timeout!r}"


def check_options(task: AnyTask) -> None:
    """Raise ``InvalidTask`` naming the first bad weft option of ``task``."""
    for problem in option_problems(task):
        raise InvalidTask(problem)


def backend_option_problems(options: Mapping[str, Any]) -> Iterator[str]:
    """What is wrong with a ``WeftBackend``'s ``OPTIONS``, each naming the key."""
    if not isinstance(options, Mapping):
        yield f"OPTIONS must be a dict, not {options!r}"
        return
    for key in sorted(set(options) - BACKEND_OPTIONS, key=str):
        yield f"unknown OPTIONS key {key!r}; accepted: {', '.join(sorted(BACKEND_OPTIONS))}"
    yield from (f"OPTIONS {p}" for p in retry_problems(options.get("retry")))
    yield from (f"OPTIONS {p}" for p in timeout_problems(options.get("timeout")))


def task_setting(task: AnyTask, name: str, options: Mapping[str, Any]) -> Any:
    """The task's own ``retry``/``timeout`` if it sets one, else its backend's option."""
    own = getattr(task, name, None)
    return own if own is not None else options.get(name)

"""Jobs: what a schedule or a start runs, registered in code by name.

A job is a function decorated with :func:`job`. The registry maps each name to the one
version deployed in this process; runs stored for a name or version that is not here
are *blocked* (never executed, their args never decoded).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from rest_framework import serializers

from django_weft.conf import weft_settings
from django_weft.exceptions import InvalidArgs, UnknownJob
from django_weft.jobs.limits import Limit, named_limits
from django_weft.jobs.retries import Retry
from django_weft.jobs.storable import find_unstorable
from django_weft.models.run import DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from django_weft.jobs.outcomes import FinishContext, Outcome

JobFunction = Callable[..., Any]
FinishHook = Callable[["Outcome", "FinishContext"], None]
ConcurrencyKey = Callable[[Mapping[str, Any], "AbstractBaseUser | None"], "str | None"]
#: Given a name no module registered, the job it stands for (or None), found without
#: importing anything: see :meth:`JobRegistry.add_finder`.
JobFinder = Callable[[str], "Job | None"]
#: Where a job's runs execute: ``"thread"`` (a thread of the worker) or ``"process"`` (a
#: child process of the worker's pool, which its timeout can kill).
EXECUTORS = ("thread", "process")


class NoArgs(serializers.Serializer[Any]):
    """The default ``args``: no serializer. The job takes the keyword args its function
    declares (required without a default), as plain JSON values."""


@dataclass(frozen=True)
class StateSpec:
    """The state document each run of a job gets: its schema name, version and first value."""

    name: str
    version: int = 1
    initial: Callable[[], dict[str, Any]] = dict


@dataclass
class Job:
    """A registered job: the function to run and the contract its runs are held to."""

    func: JobFunction
    name: str
    version: int = 1
    args: type[serializers.Serializer[Any]] = NoArgs
    result: type[serializers.Field[Any, Any, Any, Any]] | None = None
    state: StateSpec | None = None
    concurrency: int | None = None
    concurrency_key: ConcurrencyKey | None = None
    #: Its flow limits' defaults (see :mod:`django_weft.jobs.limits`), each named.
    limits: tuple[Limit, ...] = ()
    #: A start within this long of a queued run of the same key (and owner) not begun
    #: yet replaces that run's args and pushes it back, instead of adding a run.
    debounce: timedelta | None = None
    #: At most one run of a key starts within this long; another start is refused.
    throttle: timedelta | None = None
    queue: str = "default"
    priority: int = DEFAULT_PRIORITY
    private_args: Sequence[str] = ()
    retry: Retry | None = None
    timeout: float | None = None
    #: ``"thread"`` or ``"process"`` (see :data:`EXECUTORS`); None: as
    #: ``WEFT_QUEUE_EXECUTORS`` says for its queue, else ``"thread"``.
    executor: str | None = None
    finish_hook: FinishHook | None = field(default=None, repr=False)
    #: The ``django.tasks`` backend alias of the task this job runs (see
    #: :mod:`django_weft.tasks`), stored on its runs; blank for a job of ``@job``.
    task_backend: str = ""

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)

    @property
    def runs_in_process(self) -> bool:
        """Whether its runs execute in a child process: its own ``executor``, else its
        queue's in ``WEFT_QUEUE_EXECUTORS``; read at each claim, so a settings change
        reaches the next run."""
        chosen = self.executor or weft_settings.QUEUE_EXECUTORS.get(self.queue, "thread")
        return chosen == "process"

    def retries(self, outcome: str, attempt: int, error: type[BaseException] | None) -> bool:
        """Whether an attempt that ended ``outcome`` is tried again under this job's policy.

        Args that no longer decode fail the same way at every attempt: never retried.
        """
        if error is not None and issubclass(error, InvalidArgs):
            return False
        return self.retry is not None and self.retry.retries(outcome, attempt, error)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calling the job calls its function, so jobs stay plain functions in tests."""
        return self.func(*args, **kwargs)

    def validate_args(
        self, args: Mapping[str, Any] | None, *, owner: AbstractBaseUser | None = None
    ) -> dict[str, Any]:
        """Validate ``args`` and return them in their stored (JSON) form.

        Every path that stores args goes through here (a start from Python, the API, a
        socket or the admin; a bulk start; a schedule's save and fire; a finish hook's
        chained start; a ``django.tasks`` enqueue), so the storable check is made once,
        for every kind of job: args holding a value no database stores (a NUL, a lone
        surrogate, NaN or an infinity) are refused naming its path
        (:mod:`django_weft.jobs.storable`), before anything is written. What the args
        must be is :meth:`parse_args`'s to say, which a kind of job overrides.
        """
        stored = self.parse_args({} if args is None else args, owner)
        found = find_unstorable(stored)
        if found is not None:
            raise InvalidArgs(self.name, {found.where: [found.problem]})
        return stored

    def parse_args(self, data: object, owner: AbstractBaseUser | None) -> dict[str, Any]:
        """``data`` checked against this job's contract, in its stored (JSON) form.

        Unknown keys are refused too: a typo in a schedule's args should fail on save,
        not be dropped silently. A job without an args serializer takes the keyword args
        its function declares, as JSON values. The serializer finds who the run will
        run as in ``context["owner"]`` (None: the project's own code), for args only
        some owners may give (a stored module only its users may call).
        """
        if not isinstance(data, Mapping):
            raise InvalidArgs(self.name, {"args": ["Expected an object of named args."]})
        if self.args is NoArgs:
            return self._validate_by_signature(dict(data))
        return self._validate_by_serializer(data, owner)

    def _validate_by_serializer(
        self, data: Mapping[str, Any], owner: AbstractBaseUser | None
    ) -> dict[str, Any]:
        """The args of a job with a serializer, in the serializer's stored form."""
        serializer = self.args(data=dict(data), context={"owner": owner})
        unknown = sorted(set(data) - set(serializer.fields))
        errors: dict[str, list[str]] = {}
        if not serializer.is_valid():
            errors.update(flatten_errors(serializer.errors))
        for name in unknown:
            errors[name] = [f'Unknown arg; "{self.name}" accepts: {_names(serializer.fields)}.']
        if errors:
            raise InvalidArgs(self.name, errors)
        return dict(serializer.data)

    def _validate_by_signature(self, data: dict[str, Any]) -> dict[str, Any]:
        """The args of a job without a serializer: its function's keyword parameters."""
        named, open_ended = self._keyword_parameters
        errors: dict[str, list[str]] = {}
        for name in sorted(set(data) - set(named)) if not open_ended else []:
            errors[name] = [f'Unknown arg; "{self.name}" accepts: {_names(named)}.']
        for name, parameter in named.items():
            if parameter.default is inspect.Parameter.empty and name not in data:
                errors[name] = ["This field is required."]
        for name, value in data.items():
            try:
                json.dumps(value)
            except (TypeError, ValueError):
                errors.setdefault(name, []).append(f"Not a JSON value: {value!r}.")
        if errors:
            raise InvalidArgs(self.name, errors)
        return data

    @cached_property
    def _keyword_parameters(self) -> tuple[dict[str, inspect.Parameter], bool]:
        """The parameters after the context that args can fill, and whether it takes
        ``**kwargs``: read once, since ``inspect.signature`` cost a bulk start of 1,000
        runs a tenth of its time when it was read for every run."""
        parameters = list(inspect.signature(self.func).parameters.values())[1:]
        named = {p.name: p for p in parameters if p.kind in _NAMED}
        return named, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)

    def decode_args(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        """Turn stored args back into the values the function receives."""
        if self.args is NoArgs:
            return dict(stored)
        serializer = self.args(data=dict(stored))
        if not serializer.is_valid():
            raise InvalidArgs(self.name, flatten_errors(serializer.errors))
        return dict(serializer.validated_data)

    def public_args(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        """The args without the ones this job marks private (what a guest may see)."""
        return {k: v for k, v in stored.items() if k not in self.private_args}

    def finish(self, hook: FinishHook) -> FinishHook:
        """Decorator: register the hook run in the finish transaction of every run."""
        self.finish_hook = hook
        return hook


def check_priority(priority: int) -> int:
    """``priority`` if it is a whole number from -100 to 100; ValueError naming it otherwise."""
    if (
        not isinstance(priority, int)
        or isinstance(priority, bool)
        or not MIN_PRIORITY <= priority <= MAX_PRIORITY
    ):
        raise ValueError(
            f"priority must be a whole number from {MIN_PRIORITY} to {MAX_PRIORITY}, "
            f"not {priority!r}"
        )
    return priority


#: Parameters a keyword arg can fill.
_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _names(fields: Mapping[str, Any]) -> str:
    return ", ".join(sorted(fields)) or "no args"


def flatten_errors(errors: Any, path: str = "") -> dict[str, list[str]]:
    """DRF's nested error structure as ``{"field.sub": [messages]}``."""
    nested: Iterable[tuple[Any, Any]]
    if isinstance(errors, Mapping):
        nested = errors.items()
    elif isinstance(errors, list) and any(isinstance(e, Mapping | list) for e in errors):
        nested = ((index, error) for index, error in enumerate(errors) if error)
    else:
        messages = errors if isinstance(errors, list) else [errors]
        return {path or "args": [str(message) for message in messages]}
    flat: dict[str, list[str]] = {}
    for key, value in nested:
        name = path if key == "non_field_errors" else f"{path}.{key}" if path else str(key)
        flat.update(flatten_errors(value, name))
    return flat


class JobRegistry:
    """The jobs deployed in this process, by name."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._finders: list[JobFinder] = []
        #: Changes whenever a job is registered or removed, so that what is derived from
        #: the deployed jobs (the claim's filter) is computed once per deployment.
        self.generation = 0

    def add_finder(self, finder: JobFinder) -> None:
        """Let ``finder`` name the jobs no module registered; the first it finds is kept.

        A ``django.tasks`` task is stored by its import path and found among the tasks
        declared in this process (:mod:`django_weft.tasks.declared`), in whatever
        process first needs it: the worker that claims its runs, the form that saves a
        schedule of it. A finder is asked about names clients send, so it must never
        import what a name points at: only what this process defined resolves.
        """
        if finder not in self._finders:
            self._finders.append(finder)

    def known(self, name: str) -> Job | None:
        """The job registered as ``name``, without asking the finders."""
        return self._jobs.get(name)

    def _lookup(self, name: str) -> Job | None:
        known = self._jobs.get(name)
        if known is not None:
            return known
        for finder in self._finders:
            found = finder(name)
            if found is not None:
                # Importing it may have registered it already.
                return self._jobs.get(name) or self.register(found)
        return None

    def register(self, job: Job) -> Job:
        existing = self._jobs.get(job.name)
        if existing is not None and existing.func is not job.func:
            raise ValueError(f'a job named "{job.name}" is already registered ({existing.func!r})')
        self._jobs[job.name] = job
        self.generation += 1
        return job

    def unregister(self, name: str) -> None:
        if self._jobs.pop(name, None) is not None:
            self.generation += 1

    def get(self, name: str) -> Job:
        job = self._lookup(name)
        if job is None:
            raise UnknownJob(name)
        return job

    def deployed(self, name: str, version: int) -> Job | None:
        """The job that can run a stored run of ``name`` at ``version``, if this code has it."""
        job = self._lookup(name)
        return job if job is not None and job.version == version else None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._lookup(name) is not None

    def __iter__(self) -> Iterator[Job]:
        return iter(sorted(self._jobs.values(), key=lambda j: j.name))


registry = JobRegistry()


def job(
    name: str | None = None,
    *,
    version: int = 1,
    args: type[serializers.Serializer[Any]] = NoArgs,
    result: type[serializers.Field[Any, Any, Any, Any]] | None = None,
    state: StateSpec | None = None,
    concurrency: int | None = None,
    concurrency_key: ConcurrencyKey | None = None,
    limits: Sequence[Limit] = (),
    debounce: timedelta | None = None,
    throttle: timedelta | None = None,
    queue: str = "default",
    priority: int = DEFAULT_PRIORITY,
    private_args: Sequence[str] = (),
    retry: Retry | None = None,
    timeout: float | None = None,
    executor: str | None = None,
) -> Callable[[JobFunction], Job]:
    """Register the decorated function as a job.

    The function is called as ``func(ctx, **args)`` with a
    :class:`~django_weft.jobs.context.RunContext` and the validated args; it may be
    ``async def``. ``name`` defaults to ``module.function``. ``retry`` (a
    :class:`~django_weft.jobs.retries.Retry`) allows more attempts; ``timeout`` (seconds) asks
    a run to stop once it has run that long, and gives up on it after the grace.
    ``executor="process"`` runs it in a child process of the worker's pool, so that code
    which never reaches ``ctx.check()`` (a C call, a regex, a loop holding the GIL) is
    killed at its timeout's grace instead of freezing a thread; ``"thread"`` keeps it on a
    thread of the worker whatever its queue says (see ``WEFT_QUEUE_EXECUTORS``).

    ``concurrency`` refuses a start while that many runs of the job (of its key, with
    ``concurrency_key``) are unfinished; ``limits`` (:class:`~django_weft.jobs.limits.Limit`)
    keep runs queued instead, until a concurrency or rate across the cluster allows them.
    ``debounce`` merges a burst of starts of a key into one run, the last start's args,
    begun once the burst has been quiet that long; ``throttle`` refuses a start of a key
    within that long of the last one (see docs/flow-control.md).
    """
    if concurrency is not None and concurrency < 1:
        raise ValueError(f"concurrency must be a positive number of runs, not {concurrency!r}")
    for pacing, value in (("debounce", debounce), ("throttle", throttle)):
        if value is not None and value <= timedelta(0):
            raise ValueError(f"{pacing} must be a positive timedelta, not {value!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    check_priority(priority)
    if executor is not None and executor not in EXECUTORS:
        raise ValueError(f'executor must be "thread", "process" or None, not {executor!r}')

    def decorate(func: JobFunction) -> Job:
        named = name or f"{func.__module__}.{func.__qualname__}"
        return registry.register(
            Job(
                func=func,
                name=named,
                version=version,
                args=args,
                result=result,
                state=state,
                concurrency=concurrency,
                concurrency_key=concurrency_key,
                limits=named_limits(named, limits, keyed=concurrency_key is not None),
                debounce=debounce,
                throttle=throttle,
                queue=queue,
                priority=priority,
                private_args=tuple(private_args),
                retry=retry,
                timeout=timeout,
                executor=executor,
            )
        )

    return decorate

"""The app's settings, read through one object on every access.

Each setting is a :class:`Setting` declared on :class:`WeftSettings`: reading
``weft_settings.CLOCK`` looks up ``django.conf.settings.WEFT_CLOCK`` at that moment, never
at import time, so ``override_settings`` in tests and settings changed at start-up are
always seen. Validation lives in :mod:`django_weft.checks`, which judges the values as set
(:meth:`WeftSettings.raw`), before any conversion.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Generic, TypeVar, cast, overload

from django.conf import settings as django_settings

T = TypeVar("T")


class Setting(Generic[T]):
    """One ``WEFT_<attribute name>`` setting: its default, and how its value is read.

    ``convert`` turns the value as set into the declared type (``int`` for a count set
    as ``4.0``, ``tuple`` for a list of names); without it the value is used as set.
    """

    def __init__(self, default: T, convert: Callable[[Any], T] | None = None) -> None:
        self.default = default
        self.convert = convert
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = "WEFT_" + name

    def raw(self) -> Any:
        """The value as set in Django's settings, or the default when it is not set."""
        return getattr(django_settings, self.name, self.default)

    @overload
    def __get__(self, instance: None, owner: type) -> Setting[T]: ...

    @overload
    def __get__(self, instance: object, owner: type) -> T: ...

    def __get__(self, instance: object | None, owner: type) -> Setting[T] | T:
        if instance is None:
            return self
        value = self.raw()
        return self.convert(value) if self.convert else cast(T, value)


def _names_by_module(value: Any) -> dict[str, tuple[str, ...]]:
    return {module: tuple(names) for module, names in dict(value).items()}


class WeftSettings:
    """Every ``WEFT_*`` setting with its default."""

    CLOCK: Setting[str] = Setting("django_weft.timing.clocks.SystemClock", str)
    """Import string of the clock the scheduler reads time through."""

    JOB_MODULES: Setting[tuple[str, ...]] = Setting((), tuple)
    """Modules every process imports at start-up besides each installed app's ``jobs``
    (and, where weft runs ``django.tasks``, ``tasks``) module: the allow-list for jobs
    and tasks defined elsewhere. A job or task name resolves only to what these imports
    defined; no name a client sends is ever imported."""

    EXECUTOR: Setting[str] = Setting("django_weft.engine.worker.executors.ThreadExecutor", str)
    """Import string of the executor that runs claimed runs."""

    QUEUE_EXECUTORS: Setting[dict[str, str]] = Setting({}, dict)
    """Where the runs of each queue execute, ``{"queue": "process"}``: ``"thread"`` (the
    default for a queue not named) or ``"process"`` (a child process of the worker's
    pool); a job's own ``executor`` option wins over its queue's."""

    CONCURRENCY: Setting[int] = Setting(4, int)
    """How many runs one ``runjobs`` process executes at once."""

    POLL_INTERVAL: Setting[float] = Setting(1.0, float)
    """Longest idle sleep in seconds between two looks at the database."""

    GRACE: Setting[timedelta] = Setting(timedelta(minutes=5))
    """Default lateness after which a periodic fire counts as missed."""

    CATCH_UP_WINDOW: Setting[timedelta] = Setting(timedelta(days=1))
    """Default window of missed slots that ``catch_up="all"`` makes up."""

    SHUTDOWN_GRACE: Setting[float] = Setting(30.0, float)
    """Seconds running runs get to finish after a stop signal before they are aborted."""

    HEARTBEAT_INTERVAL: Setting[float] = Setting(5.0, float)
    """Seconds between two heartbeats of a ``runjobs`` process."""

    LOST_AFTER: Setting[float] = Setting(30.0, float)
    """Seconds without a heartbeat after which a worker's runs are finished as lost."""

    LIVENESS_DATABASE: Setting[str | None] = Setting("default")
    """Alias in ``DATABASES`` whose settings open the connection that holds a worker's
    liveness lock on PostgreSQL; ``None`` leaves liveness to the heartbeat alone."""

    LISTEN_DATABASE: Setting[str | None] = Setting("default")
    """Alias in ``DATABASES`` whose settings open the connection a worker LISTENs on for
    wake-ups (PostgreSQL): a direct connection to the same database when ``default`` goes
    through a transaction-pooling proxy such as PgBouncer; ``None`` listens to nothing
    (workers poll every ``WEFT_POLL_INTERVAL`` seconds)."""

    STATEMENT_TIMEOUT: Setting[float | None] = Setting(30.0)
    """Seconds any statement of the worker loop (finish hooks included) may run on
    PostgreSQL before it is cancelled; ``None`` keeps the server's ``statement_timeout``."""

    LOCK_TIMEOUT: Setting[float | None] = Setting(5.0)
    """Seconds a statement of the worker loop waits for a row lock on PostgreSQL before it
    gives up (and that run is tried again later); ``None`` keeps the server's."""

    ABORT_POLL_INTERVAL: Setting[float] = Setting(0.2, float)
    """Seconds between two looks for abort requests where no NOTIFY wakes the worker."""

    LIVE_RECENT_RUNS: Setting[int] = Setting(20, int)
    """How many finished runs a live socket's snapshot includes besides unfinished ones."""

    LIVE_MAX_FRAME: Setting[int] = Setting(64 * 1024, int)
    """Largest frame in characters a live socket accepts from a client."""

    LIVE_SNAPSHOT_LIMIT: Setting[int] = Setting(100, int)
    """Most unfinished runs a snapshot (or a page of them) holds."""

    LIVE_MAX_SUBSCRIPTIONS: Setting[int] = Setting(50, int)
    """Most documents one live socket may watch."""

    LIVE_ALLOW_ANONYMOUS: Setting[bool] = Setting(False, bool)
    """Whether signed-out visitors may watch runs (as guests)."""

    DOCUMENT_ACCESS: Setting[str] = Setting("django_weft.access.document_access", str)
    """Import string of ``(user, key) -> bool``: may this user watch that document?"""

    TIMEOUT_GRACE: Setting[float] = Setting(30.0, float)
    """Seconds a run past its job's timeout gets to stop before it is finished lost."""

    PRUNE_AFTER: Setting[timedelta | None] = Setting(None)
    """Age after which ``runjobs`` deletes finished runs; ``None`` keeps them all."""

    PRUNE_INTERVAL: Setting[timedelta] = Setting(timedelta(hours=1))
    """How often ``runjobs`` looks for runs to prune once it found none left."""

    PRUNE_BATCH_SIZE: Setting[int] = Setting(1000, int)
    """How many runs one pruning transaction deletes at most."""

    BULK_BATCH_SIZE: Setting[int] = Setting(500, int)
    """How many runs one transaction of a bulk retry, abort or delete handles at most."""

    # -- the sandbox (docs/sandbox.md) ------------------------------------------------------

    SANDBOX_RUNNER: Setting[str] = Setting("django_weft.sandbox.runner.ProcessRunner", str)
    """Import string of the runner that runs stored modules in a sandbox."""

    SANDBOX_IMPORTS: Setting[tuple[str, ...]] = Setting(
        (
            "math",
            "json",
            "datetime",
            "re",
            "decimal",
            "statistics",
            "itertools",
            "functools",
            "collections",
            "string",
        ),
        tuple,
    )
    """The modules a stored module may import (and their submodules)."""

    SANDBOX_IMPORT_NAMES: Setting[dict[str, tuple[str, ...]]] = Setting({}, _names_by_module)
    """Names a stored module may read from a module, beyond its built-in allow-list: the
    allow-list of a module of the project's own, or more names of a listed one."""

    SANDBOX_LAYERS: Setting[tuple[str, ...]] = Setting(
        ("network_namespace", "landlock", "seccomp", "bubblewrap"), tuple
    )
    """The optional layers the sandbox tries to apply."""

    SANDBOX_REQUIRED_LAYERS: Setting[tuple[str, ...]] = Setting((), tuple)
    """Layers without which a module's run fails instead of running, beyond the ones that
    contain it (those are required unless ``SANDBOX_UNSAFE_UNCONTAINED``)."""

    SANDBOX_UNSAFE_UNCONTAINED: Setting[bool] = Setting(False, lambda value: value is True)
    """Whether modules run where the layers that contain them (the limits, the network
    namespace, seccomp, and Landlock or bubblewrap) do not all start, with only the layers
    that do. Unsafe for code you do not trust: by default such a run fails instead. Only
    ``True`` turns it on; anything else keeps runs contained, and is checked."""

    SANDBOX_CPU_SECONDS: Setting[int] = Setting(5, int)
    """CPU seconds one call of a module may use."""

    SANDBOX_WALL_SECONDS: Setting[float] = Setting(10.0, float)
    """Seconds one call of a module may take, waiting included."""

    SANDBOX_MEMORY_BYTES: Setting[int] = Setting(512 * 1024 * 1024, int)
    """Address space of a sandbox child, the interpreter included."""

    SANDBOX_MAX_ANSWER_BYTES: Setting[int] = Setting(1024 * 1024, int)
    """Largest answer (as JSON) a module may return, and a host function too."""

    SANDBOX_MAX_OUTPUT_BYTES: Setting[int] = Setting(64 * 1024, int)
    """How much a module may print in one call."""

    SANDBOX_POOL_SIZE: Setting[int] = Setting(0, int)
    """How many sandbox children each process keeps set up and waiting."""

    # -- the API (docs/api.md) ---------------------------------------------------------------

    API_DOCS_PUBLIC: Setting[bool] = Setting(False, lambda value: value is True)
    """Whether the API's schema, Swagger UI and Redoc answer signed-out visitors too (only
    ``True`` opens them; anything else keeps them to the API's users, and is checked)."""

    # -- live sockets, again (docs/live.md) -------------------------------------------------

    LIVE_RECHECK_INTERVAL: Setting[float] = Setting(30.0, float)
    """Seconds between two looks at whether an open socket's user still holds its view."""

    # -- metrics and health (docs/metrics.md, docs/deployment.md) ------------------------------

    METRICS_TOKEN: Setting[str | None] = Setting(None)
    """The bearer token a scrape of the metrics sends (``Authorization: Bearer ...``);
    ``None``: only signed-in users with ``django_weft.view_run`` read them."""

    HEALTH_LOOP_STALE: Setting[float] = Setting(60.0, float)
    """Seconds a ``runjobs`` process's worker loop may go without a turn before its
    liveness view answers 503."""

    HEALTH_TIMEOUT: Setting[float] = Setting(2.0, float)
    """Seconds the readiness view waits for the channel layer before it counts it down."""

    @classmethod
    def declared(cls) -> dict[str, Setting[Any]]:
        """Every setting by its name in Django's settings (``WEFT_CLOCK``, ...)."""
        return {value.name: value for value in vars(cls).values() if isinstance(value, Setting)}

    def raw(self, name: str) -> Any:
        """The value of setting ``name`` (``WEFT_CLOCK``) as set, or its default."""
        return self.declared()[name].raw()


weft_settings = WeftSettings()

"""The app's settings, read through one object on every access.

Each property reads ``django.conf.settings`` when it is used, never at import time, so
``override_settings`` in tests and settings changed at start-up are always seen.
Validation lives in :mod:`django_weft.checks`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings


class WeftSettings:
    """Every ``WEFT_*`` setting with its default."""

    defaults: dict[str, Any] = {
        "WEFT_CLOCK": "django_weft.timing.clocks.SystemClock",
        "WEFT_EXECUTOR": "django_weft.engine.executors.ThreadExecutor",
        "WEFT_CONCURRENCY": 4,
        "WEFT_POLL_INTERVAL": 1.0,
        "WEFT_GRACE": timedelta(minutes=5),
        "WEFT_CATCH_UP_WINDOW": timedelta(days=1),
        "WEFT_SHUTDOWN_GRACE": 30.0,
        "WEFT_HEARTBEAT_INTERVAL": 5.0,
        "WEFT_LOST_AFTER": 30.0,
        "WEFT_ABORT_POLL_INTERVAL": 0.2,
        "WEFT_LIVE_RECENT_RUNS": 20,
        "WEFT_LIVE_MAX_FRAME": 64 * 1024,
        "WEFT_LIVE_SNAPSHOT_LIMIT": 100,
        "WEFT_LIVE_MAX_SUBSCRIPTIONS": 50,
        "WEFT_LIVE_ALLOW_ANONYMOUS": False,
        "WEFT_DOCUMENT_ACCESS": "django_weft.access.document_access",
        "WEFT_TIMEOUT_GRACE": 30.0,
        "WEFT_PRUNE_AFTER": None,
        "WEFT_PRUNE_INTERVAL": timedelta(hours=1),
        "WEFT_PRUNE_BATCH_SIZE": 1000,
        # The sandbox (docs/sandbox.md).
        "WEFT_SANDBOX_RUNNER": "django_weft.sandbox.runner.ProcessRunner",
        "WEFT_SANDBOX_IMPORTS": (
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
        "WEFT_SANDBOX_LAYERS": ("network_namespace", "landlock", "seccomp", "bubblewrap"),
        "WEFT_SANDBOX_REQUIRED_LAYERS": (),
        "WEFT_SANDBOX_CPU_SECONDS": 5,
        "WEFT_SANDBOX_WALL_SECONDS": 10.0,
        "WEFT_SANDBOX_MEMORY_BYTES": 512 * 1024 * 1024,
        "WEFT_SANDBOX_MAX_ANSWER_BYTES": 1024 * 1024,
        "WEFT_SANDBOX_MAX_OUTPUT_BYTES": 64 * 1024,
        "WEFT_SANDBOX_POOL_SIZE": 0,
    }

    def _get(self, name: str) -> Any:
        return getattr(django_settings, name, self.defaults[name])

    @property
    def CLOCK(self) -> str:
        """Import string of the clock the scheduler reads time through."""
        return str(self._get("WEFT_CLOCK"))

    @property
    def EXECUTOR(self) -> str:
        """Import string of the executor that runs claimed runs."""
        return str(self._get("WEFT_EXECUTOR"))

    @property
    def CONCURRENCY(self) -> int:
        """How many runs one ``runjobs`` process executes at once."""
        return int(self._get("WEFT_CONCURRENCY"))

    @property
    def POLL_INTERVAL(self) -> float:
        """Longest idle sleep in seconds between two looks at the database."""
        return float(self._get("WEFT_POLL_INTERVAL"))

    @property
    def GRACE(self) -> timedelta:
        """Default lateness after which a periodic fire counts as missed."""
        value: timedelta = self._get("WEFT_GRACE")
        return value

    @property
    def CATCH_UP_WINDOW(self) -> timedelta:
        """Default window of missed slots that ``catch_up="all"`` makes up."""
        value: timedelta = self._get("WEFT_CATCH_UP_WINDOW")
        return value

    @property
    def SHUTDOWN_GRACE(self) -> float:
        """Seconds running runs get to finish after a stop signal before they are aborted."""
        return float(self._get("WEFT_SHUTDOWN_GRACE"))

    @property
    def HEARTBEAT_INTERVAL(self) -> float:
        """Seconds between two heartbeats of a ``runjobs`` process."""
        return float(self._get("WEFT_HEARTBEAT_INTERVAL"))

    @property
    def LOST_AFTER(self) -> float:
        """Seconds without a heartbeat after which a worker's runs are finished as lost."""
        return float(self._get("WEFT_LOST_AFTER"))

    @property
    def ABORT_POLL_INTERVAL(self) -> float:
        """Seconds between two looks for abort requests where no NOTIFY wakes the worker."""
        return float(self._get("WEFT_ABORT_POLL_INTERVAL"))

    @property
    def LIVE_RECENT_RUNS(self) -> int:
        """How many finished runs a live socket's snapshot includes besides unfinished ones."""
        return int(self._get("WEFT_LIVE_RECENT_RUNS"))

    @property
    def LIVE_MAX_FRAME(self) -> int:
        """Largest frame in characters a live socket accepts from a client."""
        return int(self._get("WEFT_LIVE_MAX_FRAME"))

    @property
    def LIVE_SNAPSHOT_LIMIT(self) -> int:
        """Most unfinished runs a snapshot (or a page of them) holds."""
        return int(self._get("WEFT_LIVE_SNAPSHOT_LIMIT"))

    @property
    def LIVE_MAX_SUBSCRIPTIONS(self) -> int:
        """Most documents one live socket may watch."""
        return int(self._get("WEFT_LIVE_MAX_SUBSCRIPTIONS"))

    @property
    def LIVE_ALLOW_ANONYMOUS(self) -> bool:
        """Whether signed-out visitors may watch runs (as guests)."""
        return bool(self._get("WEFT_LIVE_ALLOW_ANONYMOUS"))

    @property
    def DOCUMENT_ACCESS(self) -> str:
        """Import string of ``(user, key) -> bool``: may this user watch that document?"""
        return str(self._get("WEFT_DOCUMENT_ACCESS"))

    @property
    def TIMEOUT_GRACE(self) -> float:
        """Seconds a run past its job's timeout gets to stop before it is finished lost."""
        return float(self._get("WEFT_TIMEOUT_GRACE"))

    @property
    def PRUNE_AFTER(self) -> timedelta | None:
        """Age after which ``runjobs`` deletes finished runs; ``None`` keeps them all."""
        value: timedelta | None = self._get("WEFT_PRUNE_AFTER")
        return value

    @property
    def PRUNE_INTERVAL(self) -> timedelta:
        """How often ``runjobs`` looks for runs to prune once it found none left."""
        value: timedelta = self._get("WEFT_PRUNE_INTERVAL")
        return value

    @property
    def PRUNE_BATCH_SIZE(self) -> int:
        """How many runs one pruning transaction deletes at most."""
        return int(self._get("WEFT_PRUNE_BATCH_SIZE"))

    # -- the sandbox ------------------------------------------------------------------------

    @property
    def SANDBOX_RUNNER(self) -> str:
        """Import string of the runner that runs stored modules in a sandbox."""
        return str(self._get("WEFT_SANDBOX_RUNNER"))

    @property
    def SANDBOX_IMPORTS(self) -> tuple[str, ...]:
        """The modules a stored module may import (and their submodules)."""
        return tuple(self._get("WEFT_SANDBOX_IMPORTS"))

    @property
    def SANDBOX_LAYERS(self) -> tuple[str, ...]:
        """The optional layers the sandbox tries to apply."""
        return tuple(self._get("WEFT_SANDBOX_LAYERS"))

    @property
    def SANDBOX_REQUIRED_LAYERS(self) -> tuple[str, ...]:
        """Layers without which a module's run fails instead of running."""
        return tuple(self._get("WEFT_SANDBOX_REQUIRED_LAYERS"))

    @property
    def SANDBOX_CPU_SECONDS(self) -> int:
        """CPU seconds one call of a module may use."""
        return int(self._get("WEFT_SANDBOX_CPU_SECONDS"))

    @property
    def SANDBOX_WALL_SECONDS(self) -> float:
        """Seconds one call of a module may take, waiting included."""
        return float(self._get("WEFT_SANDBOX_WALL_SECONDS"))

    @property
    def SANDBOX_MEMORY_BYTES(self) -> int:
        """Address space of a sandbox child, the interpreter included."""
        return int(self._get("WEFT_SANDBOX_MEMORY_BYTES"))

    @property
    def SANDBOX_MAX_ANSWER_BYTES(self) -> int:
        """Largest answer (as JSON) a module may return, and a host function too."""
        return int(self._get("WEFT_SANDBOX_MAX_ANSWER_BYTES"))

    @property
    def SANDBOX_MAX_OUTPUT_BYTES(self) -> int:
        """How much a module may print in one call."""
        return int(self._get("WEFT_SANDBOX_MAX_OUTPUT_BYTES"))

    @property
    def SANDBOX_POOL_SIZE(self) -> int:
        """How many sandbox children each process keeps set up and waiting."""
        return int(self._get("WEFT_SANDBOX_POOL_SIZE"))


weft_settings = WeftSettings()

"""What a worker is told when it is built: ``runjobs``'s flags, or a test's keywords.

One frozen value, resolved against the settings once, so that the worker and the parts
carved out of it read the same options and none reads a setting the worker was told
otherwise about; what is not given comes from ``WEFT_CONCURRENCY``,
``WEFT_SHUTDOWN_GRACE`` and ``WEFT_POLL_INTERVAL`` at that moment.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from django_weft.conf import weft_settings


@dataclass(frozen=True)
class WorkerOptions:
    """The options of one worker, resolved: build it with :meth:`of`."""

    #: How many runs execute at once (``--concurrency``).
    concurrency: int
    #: Only runs of these queues are claimed (``--queue``); None: every queue.
    queues: tuple[str, ...] | None
    #: Only runs of these jobs are claimed (``--job``); None: every registered job.
    jobs: frozenset[str] | None
    #: Whether this worker fires schedules (``--no-schedules`` says not).
    schedules: bool
    #: Seconds running runs get to finish after a stop (``--shutdown-grace``).
    shutdown_grace: float
    #: The longest the loop goes without a full look at the database.
    poll_interval: float
    #: Touched at least every second while the loop turns, database or not: what a
    #: liveness probe watches (``--health-file``, see docs/deployment.md).
    health_file: Path | None

    @classmethod
    def of(
        cls,
        *,
        concurrency: int | None = None,
        queues: Iterable[str] | None = None,
        jobs: Iterable[str] | None = None,
        schedules: bool = True,
        shutdown_grace: float | None = None,
        poll_interval: float | None = None,
        health_file: Path | None = None,
    ) -> WorkerOptions:
        """The options given, and the settings for those that are not (``None``)."""
        return cls(
            concurrency=concurrency or weft_settings.CONCURRENCY,
            queues=tuple(queues) if queues is not None else None,
            jobs=frozenset(jobs) if jobs is not None else None,
            schedules=schedules,
            shutdown_grace=(
                weft_settings.SHUTDOWN_GRACE if shutdown_grace is None else shutdown_grace
            ),
            poll_interval=poll_interval or weft_settings.POLL_INTERVAL,
            health_file=health_file,
        )

"""The worker's chores beside its work, each on a rhythm of its own.

- Pruning (:class:`Pruner`), when ``WEFT_PRUNE_AFTER`` asks for it: one bounded batch of
  old finished runs per round (see :mod:`~django_weft.engine.history.pruning`), so a backlog of
  a million runs is worked through beside the runs, never instead of them; once a batch
  comes back short the backlog is gone, the rows of long-stopped workers go too, and the
  step rests for ``WEFT_PRUNE_INTERVAL`` on the worker's clock.
- The overview's history (:class:`Tallier`): the finished runs of settled minutes are
  counted into summary rows (:mod:`~django_weft.engine.history.tallying`), a chunk a round while
  behind, then once a minute on the worker's clock.
- Blocked runs (:class:`BlockedWatch`): once a minute, the job versions of the queued
  runs are read, and a run of a job or version this code does not define is logged,
  once per job and version in the process's life: such runs wait for a deploy, and
  nothing else in a worker's log would say so.
- The health file (:class:`HealthFile`, ``runjobs --health-file``), touched at least
  every second while the loop turns, database or not, in real seconds: what a liveness
  probe watches (see docs/deployment.md). Each turn also beats :data:`loop_pulse`, which
  the liveness view of ``runjobs --http`` reads (:mod:`django_weft.observe.health`).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

from django_weft.conf import weft_settings
from django_weft.engine.database.outages import Step
from django_weft.engine.history.pruning import prune_batch, prune_besides_runs
from django_weft.engine.history.tallying import tally
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.models import Run

logger = logging.getLogger("django_weft.worker")


class Pruner:
    """When this worker prunes next, and the step that does."""

    def __init__(self) -> None:
        self._next_prune: datetime | None = None

    def step(self, now: datetime, changes: Changes) -> bool:
        """Delete a batch of old finished runs if it is time; True if any went.

        Once the runs are down to less than a batch, the rows of stopped workers, the
        ended groups and workflows and the audit trail from before the same moment go
        too, as ``prunejobs`` does.
        """
        keep = weft_settings.PRUNE_AFTER
        if keep is None or (self._next_prune is not None and now < self._next_prune):
            return False
        batch, before = weft_settings.PRUNE_BATCH_SIZE, now - keep
        deleted = prune_batch(before=before, size=batch)
        if deleted < batch:
            prune_besides_runs(before=before, size=batch)
            self._next_prune = now + weft_settings.PRUNE_INTERVAL
        if deleted:
            logger.info("pruned %d run(s) that finished before %s", deleted, before.isoformat())
        return deleted > 0


class Tallier:
    """When this worker counts finished runs into the history next, and the step that does."""

    #: How long the step rests once the history has caught up.
    REST = timedelta(minutes=1)

    def __init__(self) -> None:
        self._next: datetime | None = None

    def step(self, now: datetime, changes: Changes) -> bool:
        """Count a chunk of settled minutes if it is time; True if any were counted."""
        if self._next is not None and now < self._next:
            return False
        counted = tally(now)
        if not counted:
            self._next = now + self.REST
        return counted


class BlockedWatch:
    """When this worker looks for blocked runs next, and which it has logged."""

    EVERY = timedelta(minutes=1)

    def __init__(self) -> None:
        self._next: datetime | None = None
        self._logged: set[tuple[str, int]] = set()

    def step(self, now: datetime, changes: Changes) -> bool:
        """Log the job versions of queued runs this code cannot run, not logged before."""
        if self._next is not None and now < self._next:
            return False
        self._next = now + self.EVERY
        for name, version in Run.objects.queued_job_versions():
            if (name, version) in self._logged or registry.deployed(name, version) is not None:
                continue
            self._logged.add((name, version))
            here = f"version {registry.get(name).version}" if name in registry else "no such job"
            logger.warning(
                "runs of %s version %d are queued and blocked: this code has %s; they wait "
                "for a worker whose code defines that version",
                name,
                version,
                here,
            )
        return False


class Chores:
    """The chores a round does after its work, by name, each on its own rhythm."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, Step]] = [
            ("prune", Pruner().step),
            ("tally", Tallier().step),
            ("blocked", BlockedWatch().step),
        ]


class LoopPulse:
    """When a worker loop of this process last turned, in monotonic seconds.

    One per process (:data:`loop_pulse`): the worker loop beats it, a liveness view
    asks it, from another thread. A process whose loop never turned (a web server)
    has no pulse, which is not a failure.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._beat: float | None = None

    def beat(self) -> None:
        with self._lock:
            self._beat = time.monotonic()

    def stop(self) -> None:
        """The loop ended: this process has no loop to watch any more."""
        with self._lock:
            self._beat = None

    def since_last_beat(self) -> float | None:
        """Seconds since the loop last turned; None if no loop ever turned here."""
        with self._lock:
            beat = self._beat
        return None if beat is None else time.monotonic() - beat


#: This process's worker loop.
loop_pulse = LoopPulse()


class HealthFile:
    """A file touched at most once a second, for a liveness probe (None: no file); every
    touch beats :data:`loop_pulse` too, file or not."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._touched = 0.0

    def touch(self) -> None:
        loop_pulse.beat()
        if self.path is None or time.monotonic() - self._touched < 1.0:
            return
        self._touched = time.monotonic()
        try:
            self.path.touch()
        except OSError as error:
            logger.warning("cannot touch the health file %s: %s", self.path, error)

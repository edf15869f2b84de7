"""``Run.version``: 1 when started, one more at every UPDATE, kept by the database.

The trigger of migration 0013 counts every writer's change; these tests also fail if a
later migration loses it (SQLite drops a table's triggers when Django rebuilds the table).
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from django_weft.engine.worker.loop import Worker
from django_weft.jobs.registry import registry
from django_weft.models import Run, RunStatus
from django_weft.operations import start
from django_weft.testing import DrivenClock

pytestmark = pytest.mark.django_db(transaction=True)


def version_of(run: Run) -> int:
    return Run.objects.values_list("version", flat=True).get(pk=run.pk)


def test_run_version_grows_at_every_step_of_a_run(clock: DrivenClock) -> None:
    """Started at 1; the abort request, the claim and the finish each make it bigger."""
    run = start(registry.get("tests.noop"), {})
    seen = [version_of(run)]
    run.record_abort_request(timezone.now())
    seen.append(version_of(run))
    worker = Worker(clock=clock, executor="django_weft.engine.worker.executors.InlineExecutor")
    try:
        worker.tick()
    finally:
        worker.close()
    seen.append(version_of(run))

    assert Run.objects.get(pk=run.pk).is_finished
    assert seen[0] == 1
    assert seen == sorted(set(seen)), f"each step bumps the version: {seen}"


def test_run_version_counts_every_writer_and_never_goes_back() -> None:
    """A QuerySet.update() bumps it, and so does a save() of an instance read before:
    the count follows the stored row, not the value the writer holds."""
    run = start(registry.get("tests.noop"), {})
    stale = Run.objects.get(pk=run.pk)
    Run.objects.filter(pk=run.pk).update(priority=5)
    Run.objects.filter(pk=run.pk).update(priority=6)
    assert version_of(run) == 3

    stale.status = RunStatus.ABORTED
    stale.save()
    assert version_of(run) == 4

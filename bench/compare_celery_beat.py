"""django-celery-beat in ``compare.py``: the cost of an idle ``DatabaseScheduler`` tick.

``celery beat -S django_celery_beat.schedulers:DatabaseScheduler`` calls
``DatabaseScheduler.tick()`` in its loop; here it is called directly on a Celery app
with an in-memory broker, which is never used: nothing is due, so nothing is sent.
The rows are interval ``PeriodicTask``s (every hour) last run within the past half
hour, written with ``bulk_create``, followed by ``PeriodicTasks.update_changed()`` as
beat's own admin and ``save()`` would signal a change.
"""

from __future__ import annotations

import random
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import _setup
import compare_common
from celery import Celery
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks
from django_celery_beat.schedulers import DatabaseScheduler

APP = "django_celery_beat"


def _sent_a_task(scheduler: DatabaseScheduler) -> bool:
    """One tick; it answers how long beat should sleep, and 0 after it sent a due task."""
    return scheduler.tick() == 0


def idle_ticks(options: dict[str, Any], logs: Path) -> dict[str, Any]:
    """Median idle ``DatabaseScheduler.tick`` with each number of periodic tasks."""
    compare_common.truncate_app(APP)
    celery = Celery("bench", broker="memory://")
    hourly = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    rng = random.Random(1)
    medians: dict[str, float] = {}
    loaded = 0
    for size in options["sizes"]:
        now = timezone.now()
        PeriodicTask.objects.bulk_create(
            [
                PeriodicTask(
                    name=f"idle-{index:06d}",
                    task="bench.noop",
                    interval=hourly,
                    last_run_at=now - timedelta(seconds=rng.uniform(0, 1800)),
                )
                for index in range(loaded, size)
            ],
            batch_size=1000,
        )
        PeriodicTasks.update_changed()
        loaded = size
        _setup.analyze()
        scheduler = DatabaseScheduler(app=celery)
        samples = _setup.time_idle_ticks(partial(_sent_a_task, scheduler), options["ticks"])
        medians[str(size)] = _setup.median(samples)
    return {"DatabaseScheduler.tick": medians}


MEASUREMENTS = {"idle_ticks": idle_ticks}

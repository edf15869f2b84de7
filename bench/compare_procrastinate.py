"""procrastinate in ``compare.py``: its tasks and its measurements.

procrastinate's Django integration: tasks on ``procrastinate.contrib.django.app``,
deferred through Django's connection, and workers ``manage.py procrastinate worker``
with its defaults (LISTEN/NOTIFY on, ``--concurrency`` as the measurement says).
Its own timestamps are the ``started`` and ``succeeded`` rows of
``procrastinate_events``, written by its triggers.
"""

from __future__ import annotations

import _setup
import compare_common
from django.db.models import Max, Min
from procrastinate.contrib.django import app
from procrastinate.contrib.django.models import ProcrastinateEvent, ProcrastinateJob

APP = "procrastinate"


@app.task(name="bench.noop")
def noop() -> None:
    """Does nothing: what is measured is the machinery around it."""


@app.task(name="bench.stamp")
def stamp(socket: str, token: int) -> None:
    """Tells the benchmark when it began (see ``compare_common.send_stamp``)."""
    compare_common.send_stamp(socket, token)


def _drained() -> compare_common.Drained:
    first = ProcrastinateEvent.objects.filter(type="started").aggregate(at=Min("at"))["at"]
    last = ProcrastinateEvent.objects.filter(type="succeeded").aggregate(at=Max("at"))["at"]
    return compare_common.Drained(
        done=ProcrastinateJob.objects.filter(status="succeeded").count(),
        first_start=first,
        last_finish=last,
        per_worker=[],  # a finished job's worker_id is cleared
    )


def _worker(*arguments: str) -> list[str]:
    return _setup.manage_command("procrastinate", "worker", *arguments, script="compare_manage.py")


MEASUREMENTS = compare_common.JobQueue(
    app_label=APP,
    enqueue_noop=noop.defer,
    enqueue_stamp=lambda socket, token: stamp.defer(socket=socket, token=token),
    drain_command=lambda options: _worker(
        "--one-shot", "--concurrency", str(options["concurrency"])
    ),
    idle_command=_worker(),
    drained=_drained,
).measurements()

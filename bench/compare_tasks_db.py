"""django-tasks-db in ``compare.py``: its tasks and its measurements.

Django 6's own ``django.tasks`` with django-tasks-db's ``DatabaseBackend`` as the
default backend; the workers are ``manage.py db_worker`` with its defaults
(``--interval 1``: an idle worker looks for tasks once a second; no NOTIFY).
"""

from __future__ import annotations

from collections import Counter

import _setup
import compare_common
from django.db.models import Max, Min
from django.tasks import TaskResultStatus, task
from django_tasks_db.models import DBTaskResult

APP = "django_tasks_database"  # its app label


@task
def noop() -> None:
    """Does nothing: what is measured is the machinery around it."""


@task
def stamp(socket: str, token: int) -> None:
    """Tells the benchmark when it began (see ``compare_common.send_stamp``)."""
    compare_common.send_stamp(socket, token)


def _drained() -> compare_common.Drained:
    span = DBTaskResult.objects.aggregate(first=Min("started_at"), last=Max("finished_at"))
    workers = Counter(
        tuple(ids) for ids in DBTaskResult.objects.values_list("worker_ids", flat=True)
    )
    return compare_common.Drained(
        done=DBTaskResult.objects.filter(status=TaskResultStatus.SUCCESSFUL).count(),
        first_start=span["first"],
        last_finish=span["last"],
        per_worker=list(workers.values()),
    )


def _worker(*arguments: str) -> list[str]:
    return _setup.manage_command("db_worker", *arguments, script="compare_manage.py")


MEASUREMENTS = compare_common.JobQueue(
    app_label=APP,
    enqueue_noop=noop.enqueue,
    enqueue_stamp=stamp.enqueue,
    drain_command=lambda options: _worker("--batch"),
    idle_command=_worker(),
    drained=_drained,
).measurements()

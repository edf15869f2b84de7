"""``task_finished``: sent once a task's run has its final outcome, from the process that
recorded it (the worker, or whoever aborted a queued run).

Weft sends :data:`~django_weft.signals.run_finished` once per run after the finish
commits, whatever ended it (a return, an error, an abort, a lost worker, a timeout); an
attempt that will be retried is no finish. So Django's signal is that one, told as a
``TaskResult``.
"""

from __future__ import annotations

import logging
from typing import Any

from django_weft.models import Run
from django_weft.signals import run_finished
from django_weft.tasks.framework import (
    InvalidTask,
    InvalidTaskBackend,
    TaskResultDoesNotExist,
    task_finished,
)
from django_weft.tasks.results import earlier_attempts, result_of

logger = logging.getLogger("django_weft.tasks")


def announce_finished_task(sender: type[Run], *, run: Run, **kwargs: Any) -> None:
    """Send ``task_finished`` for ``run`` if it is a task's; never raises into the finish."""
    if not run.task_backend:
        return
    try:
        result = result_of(run, earlier_attempts(run))
        backend = type(result.task.get_backend())
    except (TaskResultDoesNotExist, InvalidTask, InvalidTaskBackend) as error:
        # Its path names no task any more, or its backend alias or queue is gone.
        logger.warning("task_finished not sent for run %s: %s", run.pk, error)
        return
    # Robust: the outcome has committed, and a receiver that raises must not look like a
    # database outage to the worker that recorded it.
    for receiver, response in task_finished.send_robust(sender=backend, task_result=result):
        if isinstance(response, Exception):
            logger.error(
                "task_finished receiver %r failed for run %s",
                receiver,
                run.pk,
                exc_info=response,
            )


def install() -> None:
    run_finished.connect(announce_finished_task, dispatch_uid="django_weft.tasks.finished")

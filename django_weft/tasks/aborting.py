"""Aborting a task's run from its ``TaskResult``: weft's abort, which Django's tasks
framework has no word for.

A queued run ends at once; a running one is asked to stop (a task has no ``check()`` to
honour it, so it stops at its timeout, if it has one, or runs to its end). The result
then reads ``FAILED`` with the error ``django_weft.exceptions.RunAborted``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async

from django_weft import operations
from django_weft.tasks.framework import TaskResultDoesNotExist
from django_weft.tasks.results import parse_id, task_runs

if TYPE_CHECKING:
    from django_weft.tasks.framework import AnyResult


def abort(task_result: AnyResult) -> bool:
    """Request an abort of ``task_result``'s run; False if it had finished or was asked
    before. ``TaskResultDoesNotExist`` if it names no task run of weft's."""
    run = task_runs().filter(pk=parse_id(task_result.id)).first()
    if run is None:
        raise TaskResultDoesNotExist(f"no task result {task_result.id!r}")
    return operations.abort(run)


aabort = sync_to_async(abort)

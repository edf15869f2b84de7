"""The tasks this process has seen defined, by path: the only way a task path resolves.

A ``WeftBackend`` validates a task when Django defines it (``Task.__post_init__``), and
declares it here then. A name from a client, a form, a stored run or a schedule is looked
up in this index, a dictionary read; nothing here, and nothing that asks it, ever imports
the module a name points at, so no input chooses what a process imports. A task is known
to a process once its module was imported there: each installed app's ``tasks`` module
and the modules of ``WEFT_JOB_MODULES`` are, in every process, at start-up
(:class:`~django_weft.apps.WeftConfig`); a task defined anywhere else is unknown until
its module is imported, and its runs stay blocked on a worker that never imports it.

Pure: no database, no settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django_weft.tasks.framework import AnyTask

#: Each declared task by its ``module_path``: the first one seen, its definition, since
#: ``.using()`` copies (validated too) carry the same path.
_declared: dict[str, AnyTask] = {}


def declare(task: AnyTask) -> None:
    """Remember ``task`` under its path, unless a task was declared there before."""
    _declared.setdefault(task.module_path, task)


def declared_task(path: str) -> AnyTask | None:
    """The task declared at ``path`` in this process, or None."""
    return _declared.get(path)

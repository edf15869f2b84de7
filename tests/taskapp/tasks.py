"""The ``tasks`` module of tests/taskapp: declared when start-up discovers it."""

from __future__ import annotations

from django_weft.tasks.framework import task


@task()
def ping() -> str:
    """Answers "pong"."""
    return "pong"

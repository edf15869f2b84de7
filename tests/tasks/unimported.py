"""A task module nothing imports: only the registry's finder does (tests/tasks/test_finding.py)."""

from __future__ import annotations

from django_weft.tasks.framework import task


@task()
def double(number: int) -> int:
    """Doubles ``number``."""
    return number * 2

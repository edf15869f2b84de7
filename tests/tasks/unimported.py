"""A task module nothing imports but the test of ``WEFT_JOB_MODULES``
(tests/tasks/test_finding.py): a name never imports it."""

from __future__ import annotations

from django_weft.tasks.framework import task


@task()
def double(number: int) -> int:
    """Doubles ``number``."""
    return number * 2

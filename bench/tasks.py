"""The benchmarks' ``django.tasks`` task: ``bench.tasks.noop_task``, the task twin of the
job ``bench.noop``. Imported by the task benchmark and, through its stored path, by the
workers; nothing else imports it, so the other benchmarks run without a tasks framework."""

from __future__ import annotations

from django.tasks import task


@task()
def noop_task() -> None:
    """Does nothing: what is measured is the machinery around it."""

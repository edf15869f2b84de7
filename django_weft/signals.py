"""Signals a project can connect to. django-weft sends them; the one part of it that
listens is :mod:`django_weft.tasks`, which tells ``run_finished`` of a task's run as Django's
``task_finished``.

Every signal is sent after the transaction that made the change has committed, so a
receiver sees the rows as they are stored.
"""

from django.dispatch import Signal

#: A schedule could not fire or its run failed.
#: Sent with ``schedule`` (the row), ``run`` (the run, or ``None`` when no run could be
#: started: an unknown job, args that no longer validate, a refused start),
#: ``error_type`` and ``message``. A row that stays unschedulable is reported once,
#: not at every slot.
schedule_failed = Signal()

#: A run finished. Sent with ``run`` (its final row, ``status`` one of done, failed,
#: aborted, lost).
run_finished = Signal()

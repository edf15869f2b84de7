"""Signals a project can connect to. django-weft sends them; the parts of it that listen
are :mod:`django_weft.tasks`, which tells ``run_finished`` of a task's run as Django's
``task_finished``, and :mod:`django_weft.observe.metrics`, which counts them all.

Every signal about rows is sent after the transaction that made the change has committed,
so a receiver sees the rows as they are stored. The signals below ``run_finished`` are
sent robustly: a receiver that raises is logged (by Django, on ``django.dispatch``) and
changes nothing for the start, the sandbox call or the worker loop that sent it.
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

#: A group ended: its last member ended in a sealed group, and its callback (if any)
#: was started in the same transaction. Sent with ``group`` (the row as it ended) and
#: ``outcome``: ``"done"`` when every member ended done, else ``"failed"``.
group_ended = Signal()

#: A workflow ended: sent once its ending step's finish committed, with ``workflow`` (the
#: row as it ended) and ``outcome`` (``"done"``, ``"failed"`` or ``"aborted"``). A
#: workflow a retried step takes up again can end, and send this, again.
workflow_ended = Signal()

#: A run was started (its row committed): by a call, the API, a schedule's fire, a finish
#: hook. Sent with ``run`` (the row as written, ``status`` queued). A fire's run has
#: ``schedule_id`` and ``due`` set, so its lateness is ``run.created_at - run.due``.
run_started = Signal()

#: A stored module's call in the sandbox ended. Sent with ``module`` (its name),
#: ``outcome`` (``"ok"``, or the name of the :class:`~django_weft.sandbox.errors.SandboxError`
#: subclass it failed with, or ``"error"`` for anything else) and ``seconds`` (how long the
#: call took, waiting for the child included). Sent where the call ran, with no
#: transaction involved.
sandbox_called = Signal()

#: A worker's step failed and its loop began to back off (the first failure of a streak).
#: Sent with ``step`` (its name: ``claim``, ``heartbeat``, ...) and ``error``.
outage_started = Signal()

#: A worker's step worked again after an outage. Sent with ``seconds`` (how long the
#: outage lasted) and ``failures`` (how many attempts failed in it).
outage_ended = Signal()

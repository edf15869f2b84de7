"""The first code a child process of the pool runs: it sets up Django, then serves runs.

It runs in a fresh interpreter (the pool starts children with ``spawn``), before the app
registry exists, so it imports nothing of the package that needs models: it takes the
worker's settings, calls ``django.setup()`` once, and then loads the serving loop
(:mod:`django_weft.engine.worker.process_serving`) by name.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

import django
from django.conf import settings
from django.utils.module_loading import import_string

#: The serving loop, loaded once the app registry is ready.
SERVE = "django_weft.engine.worker.process_serving.serve"
#: ``prctl`` option: the signal the kernel sends this process when its parent thread ends.
PR_SET_PDEATHSIG = 1


def main(inbox: Connection, outbox: Connection, parent_pid: int, overrides: dict[str, Any]) -> None:
    """Become a child of the pool: die with the worker, take its settings, serve runs.

    ``overrides`` are the worker's ``DATABASES`` (as its connections hold them, a test
    database's name included) and ``WEFT_*`` settings, set before ``django.setup()``, so a
    run writes where the worker reads and honours the settings the worker runs with.
    """
    _die_with(parent_pid)
    # The worker decides when a run stops: a Ctrl-C in a terminal reaches the whole
    # process group, the worker too, which asks the run to stop through the pipe. A
    # handler rather than SIG_IGN, so that programs the job starts get the default back.
    # SIGTERM keeps its default: it is how the pool's clean-up at exit ends a child.
    signal.signal(signal.SIGINT, _leave_to_the_worker)
    for name, value in overrides.items():
        setattr(settings, name, value)
    django.setup()
    import_string(SERVE)(inbox, outbox)


def _die_with(parent_pid: int) -> None:
    """Have the kernel kill this process when the worker dies (Linux), even while a job
    holds the GIL and no Python code of ours can run; elsewhere the closed pipe ends it."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        # The worker died before the line above took effect.
        os._exit(0)


def _leave_to_the_worker(signum: int, frame: FrameType | None) -> None:
    """A Ctrl-C to the process group: the worker handles it, not this child."""

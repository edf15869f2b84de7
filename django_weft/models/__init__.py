"""The app's models: schedules, runs, state documents and worker processes."""

from django_weft.models.attempt import Attempt
from django_weft.models.document import Document
from django_weft.models.run import Run, RunStatus
from django_weft.models.schedule import CatchUp, LastStatus, OnFold, OnGap, Overlap, Schedule
from django_weft.models.worker import WorkerProcess

__all__ = [
    "Attempt",
    "CatchUp",
    "Document",
    "LastStatus",
    "OnFold",
    "OnGap",
    "Overlap",
    "Run",
    "RunStatus",
    "Schedule",
    "WorkerProcess",
]

"""The app's models: schedules, runs (with their durable steps and signals), groups and
workflows, flow limits, state documents, worker processes, stored modules and the audit trail of
operator actions."""

from django_weft.models.attempt import Attempt
from django_weft.models.audit import AuditAction, AuditRecord, EntryPoint
from django_weft.models.document import Document
from django_weft.models.group import Group, GroupCondition
from django_weft.models.journal import Signal, StepKind, StepRecord
from django_weft.models.limit import FlowBegin, FlowLimit
from django_weft.models.module import Module, ModuleRevision
from django_weft.models.overview import Overview
from django_weft.models.queue import PausedQueue
from django_weft.models.run import Run, RunStatus
from django_weft.models.schedule import CatchUp, LastStatus, OnFold, OnGap, Overlap, Schedule
from django_weft.models.tally import DurationTally, RunTally, TallyMark
from django_weft.models.worker import WorkerProcess
from django_weft.models.workflow import Workflow, WorkflowStatus, WorkflowStep

__all__ = [
    "Attempt",
    "AuditAction",
    "AuditRecord",
    "CatchUp",
    "Document",
    "DurationTally",
    "EntryPoint",
    "FlowBegin",
    "FlowLimit",
    "Group",
    "GroupCondition",
    "LastStatus",
    "Module",
    "ModuleRevision",
    "OnFold",
    "OnGap",
    "Overlap",
    "Overview",
    "PausedQueue",
    "Run",
    "RunStatus",
    "RunTally",
    "Schedule",
    "Signal",
    "StepKind",
    "StepRecord",
    "TallyMark",
    "WorkerProcess",
    "Workflow",
    "WorkflowStatus",
    "WorkflowStep",
]

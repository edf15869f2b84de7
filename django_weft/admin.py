"""What Django's admin autodiscovery loads: the console's pages, on the default admin site.

The pages live in :mod:`django_weft.console`; a project with an admin site of its own
registers the same classes on it.
"""

from __future__ import annotations

from django.contrib import admin

from django_weft.console.audit import AuditRecordAdmin
from django_weft.console.groups import GroupAdmin
from django_weft.console.limits import FlowLimitAdmin
from django_weft.console.overview_page import OverviewAdmin
from django_weft.console.records import DocumentAdmin
from django_weft.console.runs import RunAdmin
from django_weft.console.schedules import ScheduleAdmin
from django_weft.console.stored_modules import ModuleAdmin
from django_weft.console.workers import WorkerProcessAdmin
from django_weft.console.workflows import WorkflowAdmin
from django_weft.models import (
    AuditRecord,
    Document,
    FlowLimit,
    Group,
    Module,
    Overview,
    Run,
    Schedule,
    WorkerProcess,
    Workflow,
)

admin.site.register(Schedule, ScheduleAdmin)
admin.site.register(Run, RunAdmin)
admin.site.register(Group, GroupAdmin)
admin.site.register(Workflow, WorkflowAdmin)
admin.site.register(FlowLimit, FlowLimitAdmin)
admin.site.register(Overview, OverviewAdmin)
admin.site.register(Document, DocumentAdmin)
admin.site.register(WorkerProcess, WorkerProcessAdmin)
admin.site.register(Module, ModuleAdmin)
admin.site.register(AuditRecord, AuditRecordAdmin)

"""Records the console shows and never writes: documents (changed through the document
API, one revision at a time) and worker processes (written by the workers themselves).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from django_weft.console import formatting
from django_weft.models import Document, RunStatus, WorkerProcess

if TYPE_CHECKING:
    DocumentAdminBase = admin.ModelAdmin[Document]
    WorkerProcessAdminBase = admin.ModelAdmin[WorkerProcess]
else:
    # ModelAdmin is generic only to the type checker.
    DocumentAdminBase = WorkerProcessAdminBase = admin.ModelAdmin


class DocumentAdmin(DocumentAdminBase):
    """Documents are read here, never written: a change goes through the document API,
    one revision at a time, so that no newer revision is overwritten and every watcher
    hears it."""

    list_display = ["key", "schema", "version", "revision", "updated_at"]
    search_fields = ["key", "schema"]
    fields = readonly_fields = ("key", "schema", "version", "revision", "updated_at", "data_json")

    class Media:
        css = {"all": ["django_weft/console.css"]}

    @admin.display(description="data")
    def data_json(self, document: Document) -> str:
        """Indented and wrapped, as the run pages show JSON."""
        return format_html("<pre class='weft-json'>{}</pre>", formatting.pretty_json(document.data))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Document | None = None) -> bool:
        return False


class WorkerProcessAdmin(WorkerProcessAdminBase):
    """Worker rows are written by the workers themselves: read here, never edited or
    deleted (``prunejobs`` deletes the rows of workers that stopped long ago)."""

    list_display = ["__str__", "started_at", "last_beat", "stopped_at", "running"]
    readonly_fields = ["hostname", "pid", "started_at", "last_beat", "stopped_at"]
    ordering = ["-last_beat"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkerProcess]:
        held = Count("runs", filter=Q(runs__status=RunStatus.RUNNING))
        return super().get_queryset(request).annotate(running_runs=held)

    @admin.display(description="running", ordering="running_runs")
    def running(self, worker: WorkerProcess) -> int:
        return int(getattr(worker, "running_runs", 0))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: WorkerProcess | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: WorkerProcess | None = None) -> bool:
        return False

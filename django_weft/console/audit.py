"""The console's side of the audit trail: the list of audit records, read-only for
everyone, and the pages whose admin history the service layer writes.

:mod:`django_weft.operations` puts every operator action on record, wherever it comes
from, and writes the object's admin history (``LogEntry``) with it. A page whose writes
all go through it (:class:`HistoryFromOperations`) leaves Django's own history entries
out, which would say the same save twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from django_weft.console import formatting
from django_weft.console.moment_columns import moment_column
from django_weft.models import AuditAction, AuditRecord

if TYPE_CHECKING:
    AuditRecordAdminBase = admin.ModelAdmin[AuditRecord]
else:
    # ModelAdmin is generic only to the type checker.
    AuditRecordAdminBase = admin.ModelAdmin

#: The object types that have a console page to link to.
PAGES = ("run", "schedule", "module", "document")
#: The actions whose object is gone once they are done: their record links to no page.
DELETES = (AuditAction.RUN_DELETE, AuditAction.SCHEDULE_DELETE, AuditAction.MODULE_DELETE)


class HistoryFromOperations:
    """For a page whose every save and delete goes through :mod:`django_weft.operations`:
    the service layer writes the object's history, with the entry point, in the same
    transaction; Django's entries (which it returns to nobody) are not written again."""

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        return None

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        return None

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        return None


class AuditRecordAdmin(AuditRecordAdminBase):
    """Who did what, when, through which entry point: filtered by user, action, object
    type, entry point and time, searched by object id. Nobody adds, edits or deletes a
    record here (superusers neither); ``prunejobs`` deletes them with old runs."""

    list_display = ["moment", "actor_name", "action", "target", "text", "via"]
    list_display_links = ["moment"]
    list_filter = [
        ("actor", admin.RelatedOnlyFieldListFilter),
        "action",
        "object_type",
        "via",
    ]
    date_hierarchy = "at"
    search_fields = ["object_id"]
    search_help_text = "An object's id: a run's UUID (or its start), a schedule's number."
    fields = readonly_fields = (
        "moment",
        "actor",
        "actor_name",
        "action",
        "target",
        "object_repr",
        "text",
        "changed",
        "details",
        "via",
    )
    actions = None

    moment = moment_column("at", _("when"))

    class Media:
        css = {"all": ["django_weft/console.css"]}

    @admin.display(description=_("object"), ordering="object_id")
    def target(self, record: AuditRecord) -> str:
        """The object's type and id, linked to its page while it has one."""
        shown = formatting.short_id(record.object_id) if record.object_type == "run" else None
        label = f"{record.object_type} {shown or record.object_id}"
        url = self._page_of(record)
        if url is None:
            return label
        return format_html("<a href='{}' title='{}'>{}</a>", url, record.object_id, label)

    def _page_of(self, record: AuditRecord) -> str | None:
        if record.object_type not in PAGES or record.action in DELETES:
            return None
        name = f"{self.admin_site.name}:django_weft_{record.object_type}_change"
        try:
            return reverse(name, args=[quote(record.object_id)])
        except NoReverseMatch:  # a page this admin site does not register
            return None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AuditRecord | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: AuditRecord | None = None) -> bool:
        return False

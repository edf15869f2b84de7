"""Records the console shows and never writes: documents (changed through the document
API, one revision at a time; a run's state shown only to who sees the run in full).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from django_weft import access
from django_weft.console import formatting, visibility
from django_weft.console.moment_columns import moment_column
from django_weft.models import Document, Run

#: How a run's state document's key begins (``run:<id>``).
RUN_STATE = "run:"

if TYPE_CHECKING:
    DocumentAdminBase = admin.ModelAdmin[Document]
else:
    # ModelAdmin is generic only to the type checker.
    DocumentAdminBase = admin.ModelAdmin


class DocumentAdmin(DocumentAdminBase):
    """Documents are read here, never written: a change goes through the document API,
    one revision at a time, so that no newer revision is overwritten and every watcher
    hears it.

    A run's state document (key ``run:<id>``) is the run's output: it is shown as the run
    page shows it, in full only to those who see the run in full (its owner,
    ``view_run``); anyone else gets the guest view, which has no state. Nobody deletes a
    run's state here, whatever their permissions: it is the run's. Application documents
    are shown to ``view_document`` and deleted with ``delete_document``, as ever.
    """

    list_display = ("key", "schema", "version", "revision", "updated")
    #: The columns for a viewer who does not see every run in full: a state document's
    #: revision and last change tell how its run's output grew.
    guest_list_display = ("key", "schema", "version")
    search_fields = ["key", "schema"]
    fields = readonly_fields = ("key", "schema", "version", "revision", "updated", "data_json")
    guest_fields = ("key", "schema", "version", "state_hidden")

    updated = moment_column("updated_at", "updated")

    class Media:
        css = {"all": ["django_weft/console.css"]}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        return super().get_queryset(request).select_related("run")

    def shown_in_full(self, request: HttpRequest, document: Document) -> bool:
        """An application document is; a run's state, to whoever sees the run in full
        (one whose run is gone, to whoever sees every run in full)."""
        if not document.key.startswith(RUN_STATE):
            return True
        run: Run | None = getattr(document, "run", None)
        if run is None:
            return visibility.sees_every_run_in_full(request.user)
        return access.sees_run_in_full(request.user, run)

    def get_list_display(self, request: HttpRequest) -> tuple[str, ...]:
        if visibility.sees_every_run_in_full(request.user):
            return self.list_display
        return self.guest_list_display

    def get_fields(self, request: HttpRequest, obj: Document | None = None) -> tuple[str, ...]:
        if obj is not None and not self.shown_in_full(request, obj):
            return self.guest_fields
        return self.fields

    def get_readonly_fields(
        self, request: HttpRequest, obj: Document | None = None
    ) -> tuple[str, ...]:
        return self.get_fields(request, obj)

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        """Filters in the address read only the listed columns, for a viewer who does not
        see every run in full (``?data__icontains=`` would read run state)."""
        if not visibility.sees_every_run_in_full(request.user) and not visibility.filters_only(
            lookup, self.guest_list_display
        ):
            return False
        return super().lookup_allowed(lookup, value, request)

    @admin.display(description=_("data"))
    def data_json(self, document: Document) -> str:
        """Indented and wrapped, as the run pages show JSON."""
        return format_html("<pre class='weft-json'>{}</pre>", formatting.pretty_json(document.data))

    @admin.display(description=_("data"))
    def state_hidden(self, document: Document) -> str:
        return str(
            _("A run's state is shown to the run's owner and to users with %(permission)s.")
            % {"permission": "django_weft.view_run"}
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Document | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Document | None = None) -> bool:
        """Never a run's state; an application document with ``delete_document``. Django
        asks for each selected row too, so a bulk delete that holds a run's state deletes
        nothing."""
        if obj is not None and obj.key.startswith(RUN_STATE):
            return False
        return super().has_delete_permission(request, obj)

"""The stored modules' pages: edit a module's source and grants, approve a revision, read
its history.

Every write goes through :mod:`django_weft.operations` (``save_module_for``,
``approve_module_for``, ``delete_module_for``), which decides who may: a refused save
shows its form again with the refusal on it, a refused approval or delete an error
message (see :mod:`django_weft.console.refusals`); nothing is logged as changed. The
service layer writes each change's admin history entry, so Django's own are left out.

An approval names the revision the approver saw (the page's button in its address, the
list's action in a hidden field of each row), and is refused when a newer one was saved
since: nobody approves code they were never shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from django_weft import access, operations
from django_weft.console import formatting, module_facts, refusals
from django_weft.console.audit import HistoryFromOperations
from django_weft.console.module_form import ModuleForm
from django_weft.console.module_history import revision_view
from django_weft.console.module_try import may_try, try_view
from django_weft.console.moment_columns import moment_column
from django_weft.console.refusals import act
from django_weft.models import Module, ModuleRevision

if TYPE_CHECKING:
    ModuleAdminBase = admin.ModelAdmin[Module]
    ModuleRevisionInlineBase = admin.TabularInline[ModuleRevision, Module]
else:
    # ModelAdmin and TabularInline are generic only to the type checker.
    ModuleAdminBase = admin.ModelAdmin
    ModuleRevisionInlineBase = admin.TabularInline

#: The field of the list's form that carries, for module ``pk``, the revision its row showed.
SHOWN_REVISION = "weft_revision_{pk}"


class ModuleRevisionInline(ModuleRevisionInlineBase):
    """The module's history, newest first; revisions are never edited or deleted."""

    model = ModuleRevision
    fk_name = "module"
    #: Every column is read-only: revisions are never edited.
    readonly_fields = ["revision", "created", "author", "approval", "grants", "source_text"]
    fields = ["revision", "created", "author", "approval", "grants", "source_text"]
    extra = 0
    can_delete = False
    ordering = ["-revision"]

    created = moment_column("created_at", "created")

    def has_add_permission(self, request: HttpRequest, obj: Module | None = None) -> bool:
        return False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """The history is part of the module's page: whoever may see the page reads it
        (Django would ask for the revisions' own view permission, which no role holds)."""
        return self.admin_site.get_model_admin(Module).has_view_or_change_permission(request, obj)

    @admin.display(description=_("approved"))
    def approval(self, revision: ModuleRevision) -> str:
        if revision.approved_at is None:
            return str(_("no"))
        by = revision.approved_by or _("the project's code")
        return str(
            _("by %(by)s, %(at)s")
            % {
                "by": by,
                "at": formatting.moment(revision.approved_at, timezone.get_current_timezone()),
            }
        )

    @admin.display(description=_("source"))
    def source_text(self, revision: ModuleRevision) -> str:
        """Its changes a click away, its whole source folded: a long source in a table
        cell would push every other column off the screen."""
        changes = reverse(
            "admin:django_weft_module_revision", args=[quote(revision.module_id), revision.revision]
        )
        lines = revision.source.count("\n") + 1
        return format_html(
            "<a href='{}' class='weft-target'>{}</a>"
            "<details><summary class='weft-target'>{}</summary>"
            "<pre class='weft-module-source' tabindex='0'>{}</pre></details>",
            changes,
            _("changes") if revision.revision > 1 else _("first revision"),
            _("%(lines)d lines") % {"lines": lines},
            revision.source,
        )


class ModuleAdmin(
    refusals.RefusalsOnTheForm,
    refusals.RefusedDeletesOnThePage,
    HistoryFromOperations,
    ModuleAdminBase,
):
    form = ModuleForm
    list_display = ["name", "owner", "shown_revision", "runs", "grants", "updated"]
    search_fields = ["name"]
    readonly_fields = ["owner", "revision", "runs", "updated"]
    inlines = [ModuleRevisionInline]
    actions = ["approve_action"]
    change_form_template = "admin/django_weft/module/change_form.html"

    class Media:
        css = {"all": ["django_weft/console.css"]}
        js = ["django_weft/scrolling.js", "django_weft/module_editor.js"]

    updated = moment_column("updated_at", _("updated"))

    @admin.display(description=_("revision"), ordering="revision")
    def shown_revision(self, module: Module) -> str:
        """The latest revision, and the same number in the list's form: what the *approve*
        action approves, if it is still the latest then."""
        return format_html(
            "{}<input type='hidden' name='{}' value='{}'>",
            module.revision,
            SHOWN_REVISION.format(pk=module.pk),
            module.revision,
        )

    @admin.display(description=_("runs execute"))
    def runs(self, module: Module) -> str:
        """Which revision runs execute, and whether a later one waits for approval."""
        approved = module.approved
        if approved is None:
            return str(
                _("nothing: revision %(waiting)d waits for approval") % {"waiting": module.revision}
            )
        if _waits(module):
            return str(
                _("revision %(approved)d; revision %(waiting)d waits for approval")
                % {"approved": approved.revision, "waiting": module.revision}
            )
        return str(_("revision %(approved)d") % {"approved": approved.revision})

    def get_queryset(self, request: HttpRequest) -> QuerySet[Module]:
        return super().get_queryset(request).select_related("owner", "approved")

    def get_inlines(self, request: HttpRequest, obj: Module | None) -> list[type[Any]]:
        """The history, once there is one: a module being added has none."""
        return [] if obj is None else [ModuleRevisionInline]

    # -- saves and deletes ------------------------------------------------------------------

    def save_model(self, request: HttpRequest, obj: Module, form: Any, change: bool) -> None:
        """Through the service layer: who may save, what may be granted, what is approved."""
        refusals.refused(lambda: operations.save_module_for(request.user, obj))

    def delete_model(self, request: HttpRequest, obj: Module) -> None:
        refusals.refused(lambda: operations.delete_module_for(request.user, obj))

    # -- approvals --------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        return [
            path(
                "<path:object_id>/approve/<int:revision>/",
                self.admin_site.admin_view(self.approve_view),
                name="django_weft_module_approve",
            ),
            path(
                "<path:object_id>/revisions/<int:revision>/",
                self.admin_site.admin_view(
                    lambda request, object_id, revision: revision_view(
                        self, request, unquote(object_id), revision
                    )
                ),
                name="django_weft_module_revision",
            ),
            path(
                "<path:object_id>/try/",
                self.admin_site.admin_view(
                    lambda request, object_id: try_view(self, request, unquote(object_id))
                ),
                name="django_weft_module_try",
            ),
            *super().get_urls(),
        ]

    def approve_view(self, request: HttpRequest, object_id: str, revision: int) -> HttpResponse:
        """The page's *approve* button: the service layer decides, a refusal is a message."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        module = self.get_object(request, unquote(object_id))
        if module is None:
            raise Http404(_("no module %(module)s") % {"module": object_id})
        self._approve(request, module, revision)
        return HttpResponseRedirect(refusals.change_url(self, module.pk))

    @admin.action(description=_("Approve the revision shown of selected modules"))
    def approve_action(self, request: HttpRequest, queryset: QuerySet[Module]) -> None:
        """Approve, for each selected module, the revision its row showed (and only if it
        is still the latest)."""
        for module in queryset:
            shown = request.POST.get(SHOWN_REVISION.format(pk=module.pk), "")
            if not shown.isdigit():
                self.message_user(
                    request,
                    _(
                        "%(module)s: the list sent no revision to approve; nothing was "
                        "approved. Reload the list, read what waits, and approve again."
                    )
                    % {"module": module},
                    messages.ERROR,
                )
                continue
            self._approve(request, module, int(shown))

    def _approve(self, request: HttpRequest, module: Module, revision: int) -> None:
        """Approve ``revision``, the latest the approver was shown, or say why not."""
        user = request.user
        approved = act(
            self,
            request,
            str(module),
            lambda: operations.approve_module_for(user, module, revision, latest=True),
        )
        if approved is not None:
            said = (
                _("%(module)s: revision %(revision)d: runs execute it from now on.")
                if approved
                else _("%(module)s: revision %(revision)d: it was approved already.")
            )
            self.message_user(
                request, said % {"module": module, "revision": revision}, messages.SUCCESS
            )

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Module | None = None,
    ) -> HttpResponse:
        """The page, with an *approve* button while its latest revision waits for one, a
        *try it* link for those who may, the module's latest runs and the sandbox's
        layers on this host."""
        waiting = obj is not None and (
            obj.approved is None or obj.approved.revision != obj.revision
        )
        if obj is not None and waiting and access.may_manage_module(request.user, obj):
            context["weft_approve_url"] = reverse(
                f"{self.admin_site.name}:django_weft_module_approve",
                args=[quote(obj.pk), obj.revision],
            )
        if obj is not None:
            if may_try(request.user, obj):
                context["weft_try_url"] = reverse(
                    f"{self.admin_site.name}:django_weft_module_try", args=[quote(obj.pk)]
                )
            context["weft_recent_runs"] = module_facts.recent_runs(request.user, obj)
        context["weft_sandbox"] = module_facts.sandbox_status()
        return super().render_change_form(request, context, add, change, form_url, obj)

    # -- who may do what --------------------------------------------------------------------

    def has_change_permission(self, request: HttpRequest, obj: Module | None = None) -> bool:
        # A module's owner and a module manager change it without the model permission.
        return (
            obj is not None and access.may_manage_module(request.user, obj)
        ) or super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Module | None = None) -> bool:
        """One module at a time, from its page: Django's bulk delete (offered when this
        says yes without a module) would skip the service layer, which decides."""
        return obj is not None and (
            access.may_manage_module(request.user, obj)
            or super().has_delete_permission(request, obj)
        )


def _waits(module: Module) -> bool:
    """Whether the module's latest revision waits for approval."""
    return module.approved is None or module.approved.revision != module.revision

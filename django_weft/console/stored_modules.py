"""The stored modules' pages: edit a module's source and grants, read its history.

A save goes through the sandbox's save path, so that every revision is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from django_weft.models import Module, ModuleRevision
from django_weft.sandbox.modules import grant_errors, save_module, source_errors

if TYPE_CHECKING:
    ModuleAdminBase = admin.ModelAdmin[Module]
    ModuleRevisionInlineBase = admin.TabularInline[ModuleRevision, Module]
    ModuleFormBase = forms.ModelForm[Module]
else:
    # ModelAdmin, TabularInline and ModelForm are generic only to the type checker.
    ModuleAdminBase = admin.ModelAdmin
    ModuleRevisionInlineBase = admin.TabularInline
    ModuleFormBase = forms.ModelForm


class ModuleForm(ModuleFormBase):
    """Refuses a source RestrictedPython does not compile (naming the line) and unknown grants."""

    class Meta:
        model = Module
        fields = ["name", "source", "grants"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "source" in cleaned:
            for message in source_errors(cleaned["source"], cleaned.get("name", "")):
                self.add_error("source", message)
        if "grants" in cleaned:
            for message in grant_errors(cleaned["grants"]):
                self.add_error("grants", message)
        return cleaned


class ModuleRevisionInline(ModuleRevisionInlineBase):
    """The module's history, newest first; revisions are never edited or deleted."""

    model = ModuleRevision
    fields = ["revision", "created_at", "author", "grants", "source_text"]
    readonly_fields = ["revision", "created_at", "author", "grants", "source_text"]
    extra = 0
    can_delete = False
    ordering = ["-revision"]

    def has_add_permission(self, request: HttpRequest, obj: Module | None = None) -> bool:
        return False

    @admin.display(description="source")
    def source_text(self, revision: ModuleRevision) -> str:
        return format_html("<pre class='weft-module-source'>{}</pre>", revision.source)


class ModuleAdmin(ModuleAdminBase):
    form = ModuleForm
    list_display = ["name", "revision", "grants", "updated_at"]
    search_fields = ["name"]
    readonly_fields = ["revision", "updated_at"]
    inlines = [ModuleRevisionInline]

    def get_inlines(self, request: HttpRequest, obj: Module | None) -> list[type[Any]]:
        """The history, once there is one: a module being added has none."""
        return [] if obj is None else [ModuleRevisionInline]

    def save_model(self, request: HttpRequest, obj: Module, form: Any, change: bool) -> None:
        """Save through the sandbox's save path: the next revision, kept in the history."""
        save_module(obj, author=request.user if request.user.is_authenticated else None)

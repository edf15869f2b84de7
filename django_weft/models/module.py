from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

module_name_validator = RegexValidator(
    r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$",
    'Letters, digits, "_" and "-", in words joined by "/".',
)


class Module(models.Model):
    """A Python module stored as source, written by someone the site does not trust.

    It runs only in the sandbox (:mod:`django_weft.sandbox`), under RestrictedPython,
    and may call only the host functions its grants name. ``source`` and ``grants`` are
    its latest revision, the one being edited; runs execute its ``approved`` revision,
    which may be an older one: an edit by someone other than its owner waits for the
    owner's (or a module manager's) approval. Save it with
    :func:`django_weft.operations.save_module_for` (the admin does), which checks who
    may, compiles the source, bumps ``revision`` and keeps the revision in the history.
    """

    name = models.CharField(
        max_length=200,
        unique=True,
        validators=[module_name_validator],
        help_text='Slash-separated words, e.g. "report/daily".',
    )
    source = models.TextField(help_text="Python source, run in the sandbox under RestrictedPython.")
    grants = models.JSONField(
        default=list, blank=True, help_text="Names of the host functions the module may call."
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="weft_modules",
        help_text="Who created it; without one, only module managers may change it.",
    )
    revision = models.PositiveIntegerField(default=0, editable=False)
    approved = models.ForeignKey(
        "ModuleRevision",
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The revision runs execute.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        permissions = [
            ("manage_module", "Can change and approve anyone's module"),
            ("grant_host_function", "Can grant host functions to modules"),
            ("use_module", "Can call any module from a run or schedule"),
        ]

    def __str__(self) -> str:
        return self.name


class ModuleRevision(models.Model):
    """One saved revision of a module: its source and grants as they were, who saved it,
    and who last approved it to run (none: not approved, or approved by the project's
    own code)."""

    module = models.ForeignKey(Module, on_delete=models.CASCADE, related_name="revisions")
    revision = models.PositiveIntegerField()
    source = models.TextField()
    grants = models.JSONField(default=list, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="weft_module_revisions",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="weft_module_approvals",
    )
    approved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["module", "-revision"]
        constraints = [
            models.UniqueConstraint(fields=["module", "revision"], name="weft_module_revision_once")
        ]

    def __str__(self) -> str:
        return f"revision {self.revision}"

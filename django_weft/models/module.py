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
    and may call only the host functions its ``grants`` name. Save it with
    :func:`django_weft.sandbox.modules.save_module` (the admin does): that compiles
    the source first, bumps ``revision`` and keeps the revision in the history.
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
    revision = models.PositiveIntegerField(default=0, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ModuleRevision(models.Model):
    """One saved revision of a module: its source and grants as they were, and who saved it."""

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

    class Meta:
        ordering = ["module", "-revision"]
        constraints = [
            models.UniqueConstraint(fields=["module", "revision"], name="weft_module_revision_once")
        ]

    def __str__(self) -> str:
        return f"{self.module_id} revision {self.revision}"

from __future__ import annotations

from django.db import models


class Document(models.Model):
    """A JSON document with a revision: a run's state, or an application's own record.

    Every change is a conditional update on ``revision`` (see
    :mod:`django_weft.operations`), so two writers never lose each other's update.
    """

    key = models.CharField(max_length=255, unique=True)
    schema = models.CharField(max_length=200, help_text="Name of the schema the data follows.")
    version = models.PositiveIntegerField(default=1, help_text="Version of that schema.")
    data = models.JSONField(default=dict, blank=True)
    revision = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key

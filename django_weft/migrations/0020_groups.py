"""Groups of runs (``Group``), each run's ``group``, and the operator actions on them.

SQLite may rebuild the run table for the new column, which would lose the version
trigger of ``0014_run_version``: it is installed again after, both ways (as in 0019).
"""

import importlib
import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

VERSION = importlib.import_module("django_weft.migrations.0014_run_version")


def reinstall_version_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        install, remove = VERSION.TRIGGERS["sqlite"]
        schema_editor.execute(remove)
        schema_editor.execute(install)


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0019_waits_steps_signals"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, reinstall_version_trigger, elidable=False),
        migrations.AlterField(
            model_name="auditrecord",
            name="action",
            field=models.CharField(
                choices=[
                    ("start", "start a run"),
                    ("abort", "abort a run"),
                    ("retry", "retry a run"),
                    ("run_delete", "delete a run"),
                    ("run_now", "run a schedule now"),
                    ("schedule_create", "create a schedule"),
                    ("schedule_edit", "edit a schedule"),
                    ("schedule_enable", "enable a schedule"),
                    ("schedule_disable", "disable a schedule"),
                    ("schedule_delete", "delete a schedule"),
                    ("queue_pause", "pause a queue"),
                    ("queue_resume", "resume a queue"),
                    ("document_change", "change a document"),
                    ("module_edit", "edit a module"),
                    ("module_grant", "grant a host function"),
                    ("module_approve", "approve a module"),
                    ("module_delete", "delete a module"),
                    ("schedule_take_over", "take over a schedule"),
                    ("group_start", "start a group"),
                    ("group_add", "add to a group"),
                    ("group_seal", "seal a group"),
                    ("group_abort", "abort a group"),
                    ("signal", "signal a run"),
                ],
                max_length=40,
            ),
        ),
        migrations.CreateModel(
            name="Group",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                (
                    "name",
                    models.CharField(
                        blank=True, help_text="What the group is for.", max_length=200
                    ),
                ),
                ("idempotency_key", models.CharField(blank=True, max_length=200, null=True)),
                (
                    "condition",
                    models.CharField(
                        choices=[("all_ended", "all ended"), ("all_done", "all done")],
                        default="all_ended",
                        max_length=10,
                    ),
                ),
                ("callback_job", models.CharField(blank=True, max_length=200)),
                ("callback_args", models.JSONField(blank=True, default=dict)),
                (
                    "failure_job",
                    models.CharField(
                        blank=True,
                        help_text="With all_done: started instead when one failed.",
                        max_length=200,
                    ),
                ),
                ("failure_args", models.JSONField(blank=True, default=dict)),
                ("created_at", models.DateTimeField()),
                ("sealed_at", models.DateTimeField(blank=True, null=True)),
                ("ended_at", models.DateTimeField(blank=True, null=True)),
                ("total", models.PositiveIntegerField(default=0)),
                ("unfinished", models.PositiveIntegerField(default=0)),
                ("done", models.PositiveIntegerField(default=0)),
                ("failed", models.PositiveIntegerField(default=0)),
                ("aborted", models.PositiveIntegerField(default=0)),
                ("lost", models.PositiveIntegerField(default=0)),
                (
                    "callback_run",
                    models.OneToOneField(
                        blank=True,
                        help_text="The run its end started (the callback, or the failure one).",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="called_back_by",
                        to="django_weft.run",
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        blank=True,
                        help_text="Who started it; its members and callback are theirs.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "pk"],
            },
        ),
        migrations.AddField(
            model_name="run",
            name="group",
            field=models.ForeignKey(
                blank=True,
                help_text="The group this run is a member of; its end counts there.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="members",
                to="django_weft.group",
            ),
        ),
        migrations.AddConstraint(
            model_name="group",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key__isnull", False)),
                fields=("idempotency_key",),
                name="weft_group_idempotency_key",
            ),
        ),
        migrations.RunPython(reinstall_version_trigger, migrations.RunPython.noop, elidable=False),
    ]

"""Workflows (``Workflow``, ``WorkflowStep``), each run's ``workflow``, and the operator
actions on them.

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
        ("django_weft", "0020_groups"),
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
                    ("workflow_start", "start a workflow"),
                    ("workflow_abort", "abort a workflow"),
                    ("workflow_retry_step", "retry a workflow's step"),
                    ("signal", "signal a run"),
                ],
                max_length=40,
            ),
        ),
        migrations.CreateModel(
            name="Workflow",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                (
                    "name",
                    models.CharField(help_text="The workflow's registered name.", max_length=200),
                ),
                ("version", models.PositiveIntegerField(default=1)),
                ("idempotency_key", models.CharField(blank=True, max_length=200, null=True)),
                (
                    "args",
                    models.JSONField(
                        blank=True, default=dict, help_text="The args it was started with."
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("running", "running"),
                            ("done", "done"),
                            ("failed", "failed"),
                            ("aborted", "aborted"),
                        ],
                        default="running",
                        max_length=10,
                    ),
                ),
                ("created_at", models.DateTimeField()),
                ("ended_at", models.DateTimeField(blank=True, null=True)),
                ("abort_requested_at", models.DateTimeField(blank=True, null=True)),
                ("total", models.PositiveIntegerField(default=0, help_text="Its steps.")),
                (
                    "unfinished",
                    models.PositiveIntegerField(default=0, help_text="Its steps not ended yet."),
                ),
                (
                    "callback_run",
                    models.ForeignKey(
                        blank=True,
                        help_text="The run of the definition's on_end job its last end started.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="django_weft.run",
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        blank=True,
                        help_text="Who started it; its steps' runs are theirs.",
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
            name="workflow",
            field=models.ForeignKey(
                blank=True,
                help_text="The workflow this run is a step of; its end may start the steps after.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="runs",
                to="django_weft.workflow",
            ),
        ),
        migrations.CreateModel(
            name="WorkflowStep",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                ("position", models.PositiveIntegerField(help_text="Its place in the definition.")),
                ("job", models.CharField(max_length=200)),
                (
                    "depends_on",
                    models.JSONField(blank=True, default=list, help_text="The steps' names."),
                ),
                (
                    "runs_anyway",
                    models.BooleanField(
                        default=False,
                        help_text="Runs when its dependencies ended, whatever their outcome.",
                    ),
                ),
                (
                    "pending",
                    models.PositiveIntegerField(
                        default=0, help_text="Its dependencies that have not ended yet."
                    ),
                ),
                (
                    "run",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="workflow_step",
                        to="django_weft.run",
                    ),
                ),
                (
                    "workflow",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="steps",
                        to="django_weft.workflow",
                    ),
                ),
            ],
            options={
                "ordering": ["workflow", "position"],
            },
        ),
        migrations.AddConstraint(
            model_name="workflow",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key__isnull", False)),
                fields=("idempotency_key",),
                name="weft_workflow_idempotency_key",
            ),
        ),
        migrations.AddConstraint(
            model_name="workflowstep",
            constraint=models.UniqueConstraint(
                fields=("workflow", "name"), name="weft_workflow_step_name"
            ),
        ),
        migrations.RunPython(reinstall_version_trigger, migrations.RunPython.noop, elidable=False),
    ]

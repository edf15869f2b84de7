"""Durable steps and waits: a run may be ``waiting`` (until ``wake_at``, or for the
signal ``awaiting``), remembers its steps (``StepRecord``) and keeps the signals sent to
it (``Signal``).

On PostgreSQL a run queued again (woken, or signalled) notifies the workers as a new run
does (the function of ``0002_notify_triggers``), so a signal is acted on at once rather
than at the next poll. SQLite rebuilds the run table for the new field with a default
and the new check constraint, losing the version trigger of ``0014_run_version``: it is
installed again after, both ways.
"""

import importlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from django_weft.migrations._triggers import VendorTriggers

VERSION = importlib.import_module("django_weft.migrations.0014_run_version")


def reinstall_version_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        install, remove = VERSION.TRIGGERS["sqlite"]
        schema_editor.execute(remove)
        schema_editor.execute(install)


#: PostgreSQL: NOTIFY ``runs`` when a waiting run is queued again.
TRIGGERS = {
    "postgresql": (
        """
CREATE TRIGGER django_weft_run_woken
    AFTER UPDATE OF status ON django_weft_run
    FOR EACH ROW
    WHEN (OLD.status = 'waiting' AND NEW.status = 'queued')
    EXECUTE FUNCTION django_weft_notify_runs();
""",
        "DROP TRIGGER IF EXISTS django_weft_run_woken ON django_weft_run;",
    )
}


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0018_audit_deletes_and_takeovers"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, reinstall_version_trigger, elidable=False),
        migrations.CreateModel(
            name="Signal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                ("payload", models.JSONField(blank=True, null=True)),
                ("sent_at", models.DateTimeField()),
                ("received_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "ordering": ["run", "sent_at", "pk"],
            },
        ),
        migrations.CreateModel(
            name="StepRecord",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("step", "step"),
                            ("sleep", "sleep"),
                            ("signal", "wait for a signal"),
                        ],
                        default="step",
                        max_length=8,
                    ),
                ),
                (
                    "name",
                    models.CharField(help_text="Unique in its run, for its kind.", max_length=200),
                ),
                ("result", models.JSONField(blank=True, null=True)),
                ("attempt", models.PositiveIntegerField(help_text="The attempt that recorded it.")),
                ("recorded_at", models.DateTimeField()),
            ],
            options={
                "ordering": ["run", "recorded_at", "pk"],
            },
        ),
        migrations.RemoveConstraint(
            model_name="run",
            name="weft_run_status_valid",
        ),
        migrations.RemoveIndex(
            model_name="run",
            name="weft_run_unfinished",
        ),
        migrations.AddField(
            model_name="run",
            name="awaiting",
            field=models.CharField(
                blank=True, help_text="The signal a waiting run waits for.", max_length=100
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="resuming",
            field=models.BooleanField(
                default=False,
                help_text=(
                    "Set while a run that waited is queued to go on: its next claim "
                    "continues the same attempt."
                ),
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="wake_at",
            field=models.DateTimeField(
                blank=True,
                help_text=(
                    "A waiting run is claimable again at this moment: its sleep ends, "
                    "or its wait for a signal times out."
                ),
                null=True,
            ),
        ),
        migrations.AlterField(
            model_name="attempt",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "queued"),
                    ("waiting", "waiting"),
                    ("running", "running"),
                    ("done", "done"),
                    ("failed", "failed"),
                    ("aborted", "aborted"),
                    ("lost", "lost"),
                ],
                max_length=16,
            ),
        ),
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
                    ("signal", "signal a run"),
                ],
                max_length=40,
            ),
        ),
        migrations.AlterField(
            model_name="run",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "queued"),
                    ("waiting", "waiting"),
                    ("running", "running"),
                    ("done", "done"),
                    ("failed", "failed"),
                    ("aborted", "aborted"),
                    ("lost", "lost"),
                ],
                default="queued",
                max_length=16,
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("status__in", ("queued", "waiting", "running"))),
                fields=["job", "concurrency_key"],
                name="weft_run_unfinished",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("status", "waiting"), ("wake_at__isnull", False)),
                fields=["status", "wake_at"],
                name="weft_run_wake_at",
            ),
        ),
        migrations.AddConstraint(
            model_name="run",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "status__in",
                        ["queued", "waiting", "running", "done", "failed", "aborted", "lost"],
                    )
                ),
                name="weft_run_status_valid",
            ),
        ),
        migrations.AddField(
            model_name="signal",
            name="run",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="signals",
                to="django_weft.run",
            ),
        ),
        migrations.AddField(
            model_name="signal",
            name="sent_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="steprecord",
            name="run",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="steps",
                to="django_weft.run",
            ),
        ),
        migrations.AddIndex(
            model_name="signal",
            index=models.Index(
                condition=models.Q(("received_at__isnull", True)),
                fields=["run", "name", "sent_at"],
                name="weft_signal_unreceived",
            ),
        ),
        migrations.AddConstraint(
            model_name="steprecord",
            constraint=models.UniqueConstraint(
                fields=("run", "kind", "name"), name="weft_step_once_per_run"
            ),
        ),
        VendorTriggers(TRIGGERS),
        migrations.RunPython(reinstall_version_trigger, migrations.RunPython.noop, elidable=False),
    ]

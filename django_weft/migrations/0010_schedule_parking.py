"""A schedule whose owner's user is deleted stays, parked: ``owner_removed`` marks it.

SQLite adds a NOT NULL column by rebuilding the table, which drops the table's triggers,
so the re-arm trigger of ``0003_rearm_triggers`` is installed again after the column is
added, and after it is removed when this migration is reversed.
"""

import importlib

from django.conf import settings
from django.db import migrations, models

import django_weft.models.schedule

REARM = importlib.import_module("django_weft.migrations.0003_rearm_triggers")


def reinstall_rearm_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        install, remove = REARM.TRIGGERS["sqlite"]
        schema_editor.execute(remove)
        schema_editor.execute(install)


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0009_audit"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # Reversed last: after the column is removed.
        migrations.RunPython(migrations.RunPython.noop, reinstall_rearm_trigger, elidable=False),
        migrations.AddField(
            model_name="schedule",
            name="owner_removed",
            field=models.BooleanField(
                default=False,
                editable=False,
                help_text="Its owner's user was deleted: nothing fires until it is taken over.",
            ),
        ),
        migrations.RunPython(reinstall_rearm_trigger, migrations.RunPython.noop, elidable=False),
        migrations.AlterField(
            model_name="schedule",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django_weft.models.schedule.park_on_owner_delete,
                related_name="weft_schedules",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]

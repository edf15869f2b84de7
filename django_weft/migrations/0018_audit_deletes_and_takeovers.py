"""Two more operator actions on record: deleting a stored module, and taking over a
schedule whose owner was removed."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0017_overview_by_queue"),
    ]

    operations = [
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
                ],
                max_length=40,
            ),
        ),
    ]

"""The claim's index in its new order: priority, then when a run became claimable (a
task's ``run_after``, else its start), then its start, so that a task deferred past runs
started after it is claimed in its turn and the claim still walks one index."""

from django.db import migrations, models
from django.db.models.functions import Coalesce


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0012_task_runs"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="run",
            name="weft_run_claim",
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.OrderBy(models.F("priority"), descending=True),
                Coalesce("run_after", "created_at"),
                models.F("created_at"),
                models.F("due"),
                condition=models.Q(("status", "queued")),
                name="weft_run_claim",
            ),
        ),
    ]

"""The overview's history and a run list that stays flat at ten million runs.

``RunTally`` holds finished runs counted by bar (1, 10, 60 or 360 minutes), job, queue
and outcome, ``DurationTally`` by bar, job and duration bin, ``TallyMark`` how far each
grain is counted (:mod:`django_weft.engine.history.tallying`).
The run table gets the indexes its lists walk newest first (all runs, by job, by status)
and a partial one over the failures the overview lists. No index is dropped.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0016_run_retry_of"),
    ]

    operations = [
        migrations.CreateModel(
            name="DurationTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("start", models.DateTimeField(help_text="The first moment of the bar, UTC.")),
                (
                    "minutes",
                    models.PositiveSmallIntegerField(
                        help_text="The bar's length: 1, 10, 60 or 360."
                    ),
                ),
                ("job", models.CharField(max_length=200)),
                ("duration_bin", models.SmallIntegerField()),
                ("runs", models.PositiveIntegerField()),
            ],
            options={
                "verbose_name": "duration tally",
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="RunTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("start", models.DateTimeField(help_text="The first moment of the bar, UTC.")),
                (
                    "minutes",
                    models.PositiveSmallIntegerField(
                        help_text="The bar's length: 1, 10, 60 or 360."
                    ),
                ),
                ("job", models.CharField(max_length=200)),
                ("queue", models.CharField(max_length=100)),
                ("status", models.CharField(max_length=16)),
                ("runs", models.PositiveIntegerField()),
            ],
            options={
                "verbose_name": "run tally",
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="TallyMark",
            fields=[
                ("minutes", models.PositiveSmallIntegerField(primary_key=True, serialize=False)),
                ("through", models.DateTimeField()),
            ],
            options={
                "verbose_name": "tally mark",
                "default_permissions": (),
            },
        ),
        # The run lists filtered by job or by status walk the two indexes below, newest
        # first; the plain ones of 0015 would only be their twins.
        migrations.RemoveIndex(model_name="run", name="weft_run_job"),
        migrations.RemoveIndex(model_name="run", name="weft_run_status"),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["created_at", "id"], name="weft_run_newest"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["job", "created_at", "id"], name="weft_run_job_newest"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                fields=["status", "created_at", "id"], name="weft_run_status_newest"
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("status__in", ["failed", "lost"])),
                fields=["finished_at"],
                name="weft_run_failures",
            ),
        ),
        migrations.AddIndex(
            model_name="durationtally",
            index=models.Index(fields=["minutes", "start"], name="weft_duration_range"),
        ),
        migrations.AddIndex(
            model_name="runtally",
            index=models.Index(fields=["minutes", "start"], name="weft_tally_range"),
        ),
    ]

"""Runs of ``django.tasks`` tasks: the backend alias and the ``run_after`` they were
enqueued with, so that a task's result reads back as it was enqueued."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0011_error_class_path"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="task_backend",
            field=models.CharField(
                blank=True,
                help_text="The django.tasks backend alias of a task's run; blank for a job's.",
                max_length=100,
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="run_after",
            field=models.DateTimeField(
                blank=True, help_text="A task's run_after, as enqueued.", null=True
            ),
        ),
    ]

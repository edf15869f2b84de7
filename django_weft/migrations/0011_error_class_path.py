"""Errors keep the importable path of their class, beside its name.

A ``django.tasks`` result names an error by the dotted path its ``exception_class``
imports (``builtins.ValueError``, ``myapp.errors.Flaky``); the name alone does not say
which module a class came from. Rows written before this keep a blank path, which is
read as ``builtins.<name>`` where that names a built-in exception.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0010_schedule_parking"),
    ]

    operations = [
        migrations.AddField(
            model_name="attempt",
            name="error_class_path",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name="run",
            name="error_class_path",
            field=models.CharField(
                blank=True, help_text="The importable path of the error's class.", max_length=300
            ),
        ),
    ]

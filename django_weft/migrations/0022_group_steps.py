"""A workflow's step that is a group: ``fans_out``, its ``group`` and its ``members``
in the items' order."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0021_workflows"),
    ]

    operations = [
        migrations.AddField(
            model_name="workflowstep",
            name="fans_out",
            field=models.BooleanField(
                default=False, help_text="Runs its job once for each item of a group."
            ),
        ),
        migrations.AddField(
            model_name="workflowstep",
            name="group",
            field=models.OneToOneField(
                blank=True,
                help_text="The group a step that fans out started, once its dependencies ended.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="workflow_step",
                to="django_weft.group",
            ),
        ),
        migrations.AddField(
            model_name="workflowstep",
            name="members",
            field=models.JSONField(
                blank=True, default=list, help_text="Its group's runs' ids, in the items' order."
            ),
        ),
    ]

"""An earlier attempt keeps the output it left (``Attempt.output``): the next attempt of
the run writes its own output over the run's state."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0024_fair_share"),
    ]

    operations = [
        migrations.AddField(
            model_name="attempt",
            name="output",
            field=models.TextField(
                blank=True,
                default="",
                help_text="The run's output as this attempt left it (its state's output, "
                "bounded as the run's is): the next attempt writes its own over the run's.",
            ),
            preserve_default=False,
        ),
    ]

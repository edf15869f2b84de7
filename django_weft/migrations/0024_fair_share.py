"""Fair share: a flow limit may share its queue between keys (``fair_share``, ``weights``),
a run in such a queue has its turn (``turn_at``), the claim's order reads it first, and
two indexes over the fair queues' queued runs serve a start's placing."""

import django.db.models.functions.comparison
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0023_flow_limits"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="flowlimit",
            name="weft_limit_limits_something",
        ),
        migrations.RemoveIndex(
            model_name="run",
            name="weft_run_claim",
        ),
        migrations.AddField(
            model_name="flowlimit",
            name="fair_share",
            field=models.BooleanField(
                default=False,
                help_text=(
                    "Its queue's runs take turns between keys, round robin (weighted by "
                    "weights); priorities still order the runs of a key."
                ),
            ),
        ),
        migrations.AddField(
            model_name="flowlimit",
            name="weights",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text=(
                    'A fair share\'s weight for each key, e.g. {"tenant-7": 3}; a key not '
                    "named has weight 1."
                ),
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="turn_at",
            field=models.DateTimeField(
                blank=True,
                help_text=(
                    "Its turn on its queue's fair-share clock, set at start in a queue with "
                    "a fair share; the claim orders by it in place of when the run was "
                    "started."
                ),
                null=True,
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                models.OrderBy(models.F("priority"), descending=True),
                django.db.models.functions.comparison.Coalesce(
                    "turn_at", "run_after", "created_at"
                ),
                models.F("created_at"),
                models.F("due"),
                condition=models.Q(("status", "queued")),
                name="weft_run_claim",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("status", "queued"), ("turn_at__isnull", False)),
                fields=["queue", "turn_at"],
                name="weft_run_turns",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("status", "queued"), ("turn_at__isnull", False)),
                fields=["queue", "concurrency_key", "turn_at"],
                name="weft_run_key_turns",
            ),
        ),
        migrations.AddConstraint(
            model_name="flowlimit",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("concurrency__gte", 1), ("rate__gte", 1), ("fair_share", True), _connector="OR"
                ),
                name="weft_limit_limits_something",
                violation_error_message="Give a concurrency, a rate or a fair share.",
            ),
        ),
        migrations.AddConstraint(
            model_name="flowlimit",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("fair_share", False),
                    models.Q(("job", ""), models.Q(("queue", ""), _negated=True)),
                    _connector="OR",
                ),
                name="weft_limit_fair_share_of_a_queue",
                violation_error_message="A fair share is a queue's, for every job in it.",
            ),
        ),
    ]

"""Flow limits (``FlowLimit``), the begins counted against their rates (``FlowBegin``),
the index over running runs their counts read, and the audit trail's actions on them."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0022_group_steps"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="FlowBegin",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(blank=True, max_length=200)),
                ("at", models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name="FlowLimit",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "name",
                    models.CharField(
                        help_text="Names it in the console, the API, metrics and reasons.",
                        max_length=100,
                        unique=True,
                    ),
                ),
                (
                    "job",
                    models.CharField(
                        blank=True,
                        help_text="The job it limits; blank: every job of its queue.",
                        max_length=200,
                    ),
                ),
                (
                    "queue",
                    models.CharField(
                        blank=True,
                        help_text="The queue it limits; blank: its job's every queue.",
                        max_length=100,
                    ),
                ),
                (
                    "per_key",
                    models.BooleanField(
                        default=False,
                        help_text="Each key (from the job's concurrency_key) has it separately.",
                    ),
                ),
                (
                    "concurrency",
                    models.PositiveIntegerField(
                        blank=True, help_text="At most this many running at once.", null=True
                    ),
                ),
                (
                    "rate",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="At most this many beginning in any period.",
                        null=True,
                    ),
                ),
                (
                    "period",
                    models.DurationField(blank=True, help_text="The rate's period.", null=True),
                ),
                ("updated_at", models.DateTimeField()),
            ],
            options={
                "verbose_name": "flow limit",
                "ordering": ["name"],
            },
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
                    ("group_start", "start a group"),
                    ("group_add", "add to a group"),
                    ("group_seal", "seal a group"),
                    ("group_abort", "abort a group"),
                    ("workflow_start", "start a workflow"),
                    ("workflow_abort", "abort a workflow"),
                    ("workflow_retry_step", "retry a workflow's step"),
                    ("signal", "signal a run"),
                    ("limit_create", "create a flow limit"),
                    ("limit_edit", "edit a flow limit"),
                    ("limit_delete", "delete a flow limit"),
                ],
                max_length=40,
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(("status", "running")),
                fields=["job", "concurrency_key"],
                name="weft_run_running",
            ),
        ),
        migrations.AddField(
            model_name="flowlimit",
            name="updated_by",
            field=models.ForeignKey(
                blank=True,
                help_text="Who changed it last; none for a job's default.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="flowbegin",
            name="limit",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="django_weft.flowlimit",
            ),
        ),
        migrations.AddConstraint(
            model_name="flowlimit",
            constraint=models.CheckConstraint(
                condition=models.Q(("job", ""), ("queue", ""), _negated=True),
                name="weft_limit_has_a_scope",
                violation_error_message="Name a job, a queue, or both.",
            ),
        ),
        migrations.AddConstraint(
            model_name="flowlimit",
            constraint=models.CheckConstraint(
                condition=models.Q(("concurrency__gte", 1), ("rate__gte", 1), _connector="OR"),
                name="weft_limit_limits_something",
                violation_error_message="Give a concurrency, a rate, or both (each at least 1).",
            ),
        ),
        migrations.AddConstraint(
            model_name="flowlimit",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("period__isnull", True), ("rate__isnull", True)),
                    models.Q(("period__isnull", False), ("rate__isnull", False)),
                    _connector="OR",
                ),
                name="weft_limit_rate_has_a_period",
                violation_error_message="A rate needs its period, and a period its rate.",
            ),
        ),
        migrations.AddIndex(
            model_name="flowbegin",
            index=models.Index(fields=["limit", "at"], name="weft_begin_window"),
        ),
    ]

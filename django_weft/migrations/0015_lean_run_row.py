"""A leaner run row: every index on the run table serves a query docs/runs.md names.

``db_index=True`` on ``job`` and ``status`` gave PostgreSQL a second,
``varchar_pattern_ops`` index for each (for ``LIKE 'prefix%'``, which no query here
uses): both become plain indexes declared in the model's ``Meta``. On PostgreSQL the
table's fillfactor goes to 80, so that an update which changes no indexed column (an
abort request, a hook's error) finds room on its page and stays a HOT update, written
into no index.
"""

from django.db import migrations, models

FILLFACTOR = "ALTER TABLE django_weft_run SET (fillfactor = 80);"
DEFAULT_FILLFACTOR = "ALTER TABLE django_weft_run RESET (fillfactor);"
#: The columns whose ``db_index=True`` indexes (and PostgreSQL's LIKE twins) go.
COLUMNS = ("job", "status")


def drop_field_indexes(apps, schema_editor):
    """Drop the indexes ``db_index=True`` made, by name, rather than with AlterField:
    SQLite would rebuild the table for it, losing the version trigger of 0014."""
    run = apps.get_model("django_weft", "Run")
    for name in COLUMNS:
        field = run._meta.get_field(name)
        index = schema_editor._create_index_name(run._meta.db_table, [field.column])
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(index)}")
        if schema_editor.connection.vendor == "postgresql":
            twin = schema_editor._create_index_name(run._meta.db_table, [field.column], "_like")
            schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(twin)}")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FILLFACTOR)


def restore_field_indexes(apps, schema_editor):
    run = apps.get_model("django_weft", "Run")
    for name in COLUMNS:
        field = run._meta.get_field(name)
        schema_editor.execute(schema_editor._create_index_sql(run, fields=[field]))
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(schema_editor._create_like_index_sql(run, field))
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DEFAULT_FILLFACTOR)


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0014_run_version"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="run",
                    name="job",
                    field=models.CharField(max_length=200),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="status",
                    field=models.CharField(
                        choices=[
                            ("queued", "queued"),
                            ("running", "running"),
                            ("done", "done"),
                            ("failed", "failed"),
                            ("aborted", "aborted"),
                            ("lost", "lost"),
                        ],
                        default="queued",
                        max_length=16,
                    ),
                ),
            ],
            database_operations=[
                migrations.RunPython(drop_field_indexes, restore_field_indexes, elidable=False),
            ],
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["job"], name="weft_run_job"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["status"], name="weft_run_status"),
        ),
    ]

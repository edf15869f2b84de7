"""``Run.version``: one more at every UPDATE of a run, counted by the database.

Live frames of one run can reach a client out of order (two processes publish the same
run, each as it read it), so each carries the run's version and a client keeps the
highest. The count is kept by a trigger, so that every writer bumps it (the run steps'
SQL, ``QuerySet.update()``, the admin, a shell), and from the stored value, so that a
``save()`` of an instance read earlier cannot set it back.

PostgreSQL sets it in a ``BEFORE UPDATE`` trigger (no second write); SQLite, whose
triggers cannot change the row being written, in an ``AFTER UPDATE`` one (recursive
triggers are off by default, so its own UPDATE does not fire it again). Other databases
get no trigger, and every run stays at version 1: clients then keep the newest frame.
"""

from django.db import migrations, models

POSTGRESQL_FORWARD = """
CREATE OR REPLACE FUNCTION django_weft_run_version() RETURNS trigger AS $$
BEGIN
    NEW.version := OLD.version + 1;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER django_weft_run_versioned
    BEFORE UPDATE ON django_weft_run
    FOR EACH ROW EXECUTE FUNCTION django_weft_run_version();
"""

POSTGRESQL_BACKWARD = """
DROP TRIGGER IF EXISTS django_weft_run_versioned ON django_weft_run;
DROP FUNCTION IF EXISTS django_weft_run_version();
"""

SQLITE_FORWARD = """
CREATE TRIGGER django_weft_run_versioned
    AFTER UPDATE ON django_weft_run
    FOR EACH ROW
BEGIN
    UPDATE django_weft_run SET version = OLD.version + 1 WHERE id = OLD.id;
END;
"""

SQLITE_BACKWARD = "DROP TRIGGER IF EXISTS django_weft_run_versioned;"

TRIGGERS = {
    "postgresql": (POSTGRESQL_FORWARD, POSTGRESQL_BACKWARD),
    "sqlite": (SQLITE_FORWARD, SQLITE_BACKWARD),
}


def forward(apps, schema_editor):
    if schema_editor.connection.vendor in TRIGGERS:
        schema_editor.execute(TRIGGERS[schema_editor.connection.vendor][0])


def backward(apps, schema_editor):
    if schema_editor.connection.vendor in TRIGGERS:
        schema_editor.execute(TRIGGERS[schema_editor.connection.vendor][1])


class Migration(migrations.Migration):
    dependencies = [
        ("django_weft", "0013_claim_order"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="version",
            field=models.PositiveBigIntegerField(
                default=1,
                editable=False,
                help_text=(
                    "1 when started, one more at every change: a live client keeps the highest."
                ),
            ),
        ),
        migrations.RunPython(forward, backward, elidable=False),
    ]

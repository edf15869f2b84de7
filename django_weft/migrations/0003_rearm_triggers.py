"""Re-arm a schedule whose plan changed, whoever changed it: a database trigger.

The service layer's edits re-arm an edited row themselves, but a plain ``save()``, a
``QuerySet.update()``, a data migration or raw SQL do not go through it. On PostgreSQL
and SQLite a trigger does the same for every UPDATE: when cron, timezone, every, at,
on_gap or on_fold change, or the row is switched back on, it is marked unarmed so the
scheduler arms it from now.
"""

from django.db import migrations

CHANGED = (
    " OR ".join(
        f'NEW."{column}" {{differs}} OLD."{column}"'
        for column in ("cron", "timezone", "every", "at", "on_gap", "on_fold")
    )
    + ' OR (NEW."enabled" AND NOT OLD."enabled")'
)

POSTGRESQL = f"""
CREATE OR REPLACE FUNCTION django_weft_rearm_schedule() RETURNS trigger AS $$
BEGIN
    IF {CHANGED.format(differs="IS DISTINCT FROM")} THEN
        NEW."armed" := false;
        NEW."next_due" := NULL;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER django_weft_schedule_rearm
    BEFORE UPDATE ON django_weft_schedule
    FOR EACH ROW EXECUTE FUNCTION django_weft_rearm_schedule();
"""

POSTGRESQL_BACKWARD = """
DROP TRIGGER IF EXISTS django_weft_schedule_rearm ON django_weft_schedule;
DROP FUNCTION IF EXISTS django_weft_rearm_schedule();
"""

SQLITE = f"""
CREATE TRIGGER django_weft_schedule_rearm
    AFTER UPDATE ON django_weft_schedule
    FOR EACH ROW WHEN {CHANGED.format(differs="IS NOT")}
BEGIN
    UPDATE django_weft_schedule SET "armed" = 0, "next_due" = NULL WHERE "id" = NEW."id";
END;
"""

SQLITE_BACKWARD = "DROP TRIGGER IF EXISTS django_weft_schedule_rearm;"


#: Per database vendor: the SQL that installs the trigger and the SQL that removes it.
TRIGGERS = {
    "postgresql": (POSTGRESQL, POSTGRESQL_BACKWARD),
    "sqlite": (SQLITE, SQLITE_BACKWARD),
}


def forward(apps, schema_editor):
    install, _ = TRIGGERS.get(schema_editor.connection.vendor, (None, None))
    if install:
        schema_editor.execute(install)


def backward(apps, schema_editor):
    _, remove = TRIGGERS.get(schema_editor.connection.vendor, (None, None))
    if remove:
        schema_editor.execute(remove)


class Migration(migrations.Migration):
    dependencies = [("django_weft", "0002_notify_triggers")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]

"""PostgreSQL only: NOTIFY ``django_weft`` when schedules change, runs start or aborts are asked.

Triggers catch every writer (admin, API, ORM, ``QuerySet.update()``, raw SQL), which a
``post_save`` receiver would not. Other databases get nothing and are polled.
"""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION django_weft_notify_schedules() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('django_weft', 'schedules');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION django_weft_notify_runs() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('django_weft', 'runs');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION django_weft_notify_abort() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('django_weft', 'abort:' || NEW.id::text);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER django_weft_schedule_changed
    AFTER INSERT OR UPDATE OR DELETE ON django_weft_schedule
    FOR EACH STATEMENT EXECUTE FUNCTION django_weft_notify_schedules();

CREATE TRIGGER django_weft_run_started
    AFTER INSERT ON django_weft_run
    FOR EACH STATEMENT EXECUTE FUNCTION django_weft_notify_runs();

CREATE TRIGGER django_weft_run_abort_requested
    AFTER UPDATE OF abort_requested_at ON django_weft_run
    FOR EACH ROW
    WHEN (OLD.abort_requested_at IS NULL AND NEW.abort_requested_at IS NOT NULL)
    EXECUTE FUNCTION django_weft_notify_abort();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS django_weft_run_abort_requested ON django_weft_run;
DROP TRIGGER IF EXISTS django_weft_run_started ON django_weft_run;
DROP TRIGGER IF EXISTS django_weft_schedule_changed ON django_weft_schedule;
DROP FUNCTION IF EXISTS django_weft_notify_abort();
DROP FUNCTION IF EXISTS django_weft_notify_runs();
DROP FUNCTION IF EXISTS django_weft_notify_schedules();
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [("django_weft", "0001_initial")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]

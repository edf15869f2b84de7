"""Re-arm a schedule whose plan changed, whoever changed it: a database trigger.

The service layer's edits re-arm an edited row themselves, but a plain ``save()``, a
``QuerySet.update()``, a data migration or raw SQL do not go through it. On PostgreSQL
and SQLite a trigger does the same for every UPDATE: when cron, timezone, every, at,
on_gap or on_fold change, or the row is switched back on, it is marked unarmed so the
scheduler arms it from now.
"""

from django.db import migrations

from django_weft.migrations._triggers import VendorTriggers, postgresql_trigger, sqlite_trigger

CHANGED = (
    " OR ".join(
        f'NEW."{column}" {{differs}} OLD."{column}"'
        for column in ("cron", "timezone", "every", "at", "on_gap", "on_fold")
    )
    + ' OR (NEW."enabled" AND NOT OLD."enabled")'
)

#: Per database vendor: the SQL that installs the trigger and the SQL that removes it.
TRIGGERS = {
    "postgresql": postgresql_trigger(
        "django_weft_rearm_schedule",
        "django_weft_schedule_rearm",
        "django_weft_schedule",
        f"""    IF {CHANGED.format(differs="IS DISTINCT FROM")} THEN
        NEW."armed" := false;
        NEW."next_due" := NULL;
    END IF;""",
    ),
    "sqlite": sqlite_trigger(
        "django_weft_schedule_rearm",
        "django_weft_schedule",
        'UPDATE django_weft_schedule SET "armed" = 0, "next_due" = NULL WHERE "id" = NEW."id";',
        when=CHANGED.format(differs="IS NOT"),
    ),
}


class Migration(migrations.Migration):
    dependencies = [("django_weft", "0002_notify_triggers")]

    operations = [VendorTriggers(TRIGGERS)]

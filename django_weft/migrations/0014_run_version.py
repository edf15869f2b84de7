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

from django_weft.migrations._triggers import VendorTriggers, postgresql_trigger, sqlite_trigger

#: Per database vendor: the SQL that installs the trigger and the SQL that removes it.
TRIGGERS = {
    "postgresql": postgresql_trigger(
        "django_weft_run_version",
        "django_weft_run_versioned",
        "django_weft_run",
        "    NEW.version := OLD.version + 1;",
    ),
    "sqlite": sqlite_trigger(
        "django_weft_run_versioned",
        "django_weft_run",
        "UPDATE django_weft_run SET version = OLD.version + 1 WHERE id = OLD.id;",
    ),
}


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
        VendorTriggers(TRIGGERS),
    ]

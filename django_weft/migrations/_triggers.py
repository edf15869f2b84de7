"""The SQL of the migrations' row triggers, built one way (PostgreSQL and SQLite).

PostgreSQL changes the row being written in a ``BEFORE UPDATE`` trigger (no second
write); SQLite's triggers cannot, so the same rule is an ``AFTER UPDATE`` trigger that
updates the row again (recursive triggers are off by default, so that UPDATE does not
fire it once more). Other databases get no trigger. The leading ``_`` keeps Django's
migration loader from taking this module for a migration; what it builds is part of the
migrations that use it, so a change here must leave their SQL as it was.
"""

from django.db import router
from django.db.migrations.operations.base import Operation


def postgresql_trigger(function, trigger, table, body):
    """A PL/pgSQL function running ``body`` (then ``RETURN NEW``) before each UPDATE of a
    ``table`` row, and the trigger calling it; and the SQL removing both."""
    install = f"""
CREATE OR REPLACE FUNCTION {function}() RETURNS trigger AS $$
BEGIN
{body}
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER {trigger}
    BEFORE UPDATE ON {table}
    FOR EACH ROW EXECUTE FUNCTION {function}();
"""
    remove = f"""
DROP TRIGGER IF EXISTS {trigger} ON {table};
DROP FUNCTION IF EXISTS {function}();
"""
    return install, remove


def sqlite_trigger(trigger, table, statement, when=None):
    """An SQLite trigger running ``statement`` after each UPDATE of a ``table`` row (of
    those ``when`` holds for, if given); and the SQL removing it."""
    condition = f" WHEN {when}" if when else ""
    install = f"""
CREATE TRIGGER {trigger}
    AFTER UPDATE ON {table}
    FOR EACH ROW{condition}
BEGIN
    {statement}
END;
"""
    return install, f"DROP TRIGGER IF EXISTS {trigger};"


class VendorTriggers(Operation):
    """Installs ``triggers[vendor][0]`` on a database of that vendor, and removes it with
    ``triggers[vendor][1]``; does nothing on a vendor not listed. Changes no model state.

    An operation of its own rather than a RunPython of closures, so that it deconstructs
    (``squashmigrations`` can write it out) like any other operation.
    """

    reversible = True

    def __init__(self, triggers):
        self.triggers = triggers

    def state_forwards(self, app_label, state):
        pass

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        self._execute(app_label, schema_editor, 0)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        self._execute(app_label, schema_editor, 1)

    def describe(self):
        return f"Row triggers on {', '.join(sorted(self.triggers))}"

    def _execute(self, app_label, schema_editor, direction):
        connection = schema_editor.connection
        if connection.vendor in self.triggers and router.allow_migrate(connection.alias, app_label):
            schema_editor.execute(self.triggers[connection.vendor][direction])

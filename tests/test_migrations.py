"""Tests for the migrations: the models and the shipped migrations agree."""

from __future__ import annotations

import importlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.writer import OperationWriter

from django_weft.migrations._triggers import VendorTriggers


@pytest.mark.django_db
def test_makemigrations_check_no_changes() -> None:
    """makemigrations --check --dry-run finds no model change without a migration."""
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=StringIO())
    except SystemExit as exit:  # raised with status 1 when a migration is missing
        pytest.fail(f"missing migrations (exit {exit.code}):\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db
def test_makemigrations_check_django_weft() -> None:
    """makemigrations --check --dry-run django_weft finds the app's own migrations complete."""
    out = StringIO()
    try:
        call_command(
            "makemigrations", "django_weft", "--check", "--dry-run", stdout=out, stderr=StringIO()
        )
    except SystemExit as exit:
        pytest.fail(f"missing django_weft migrations (exit {exit.code}):\n{out.getvalue()}")
    assert "No changes detected in app 'django_weft'" in out.getvalue()


def row_triggers() -> set[str]:
    """The names of the row triggers in the test database."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        return {name for (name,) in cursor.fetchall()}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_migrations_row_triggers_removed_and_installed_again() -> None:
    """Migrating django_weft back to 0002 removes the re-arm (0003) and run-version (0014)
    triggers; migrating forward installs them again."""
    installed = {"django_weft_schedule_rearm", "django_weft_run_versioned"}
    assert installed <= row_triggers()
    call_command("migrate", "django_weft", "0002", verbosity=0)
    assert not installed & row_triggers()
    call_command("migrate", "django_weft", verbosity=0)
    assert installed <= row_triggers()


def test_migrations_row_triggers_operation_is_written_out() -> None:
    """The triggers' operation deconstructs, so squashmigrations can write it out."""
    version = importlib.import_module("django_weft.migrations.0014_run_version")
    (operation,) = [op for op in version.Migration.operations if isinstance(op, VendorTriggers)]
    written, imports = OperationWriter(operation).serialize()
    assert written.lstrip().startswith("django_weft.migrations._triggers.VendorTriggers(")
    assert "import django_weft.migrations._triggers" in imports

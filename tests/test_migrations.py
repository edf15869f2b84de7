"""Tests for the migrations: the models and the shipped migrations agree."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


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

"""Ending a test's writes without Django's flush: what tests/conftest.py's
``django_db_setup`` does after each transactional test, and what a module's shared
fixture does when the module's tests are done (tests/browser/test_console_a11y_browser.py);
and rows shared by a module's tests (:func:`shared_rows`).

Django's ``flush`` empties every table and sends post_migrate to write the content types
and permissions again: 0.15-0.25 s on SQLite, 0.5 s or more on PostgreSQL. Deleting the
rows a test wrote (every table's, and those migrate's tables got past what migrate wrote)
leaves the database as flush and post_migrate would, with the same ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest_django
from django.db import connections, transaction

#: Tables that migrate's post_migrate handlers fill (content types, permissions).
MIGRATE_WRITES = ("django_content_type", "auth_permission")


def last_ids(alias: str) -> dict[str, int]:
    """The highest id of each table that migrate writes, as it is now."""
    connection = connections[alias]
    with connection.cursor() as cursor:
        last = {}
        for table in MIGRATE_WRITES:
            cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {connection.ops.quote_name(table)}")
            last[table] = int(cursor.fetchone()[0])
    return last


def delete_rows(alias: str, written: dict[str, int]) -> None:
    """Delete every row but those of migrate's tables up to ``written`` (:func:`last_ids`)."""
    connection = connections[alias]
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    # One transaction: the foreign keys are deferred, so the order of the tables is free.
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        for table in tables:
            quoted = connection.ops.quote_name(table)
            if table in written:
                cursor.execute(f"DELETE FROM {quoted} WHERE id > %s", [written[table]])
            else:
                cursor.execute(f"DELETE FROM {quoted}")


@contextmanager
def shared_rows(blocker: pytest_django.DjangoDbBlocker) -> Iterator[None]:
    """Rows written in the block are seen by every test run inside it, and rolled back
    when it ends: one transaction around a module's non-transactional tests, each of which
    runs in a savepoint of it, as Django's ``TestCase.setUpTestData`` does for a class.

    For rows that take seconds to write and that the tests only read (or change inside
    their own savepoint, which rolls back).
    """
    with blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)

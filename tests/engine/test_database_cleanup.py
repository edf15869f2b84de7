"""The end of a transactional test (tests/conftest.py's ``django_db_setup``, with
tests/databases.py) leaves the
database as Django's flush and post_migrate would: every row a test wrote is gone, the
content types and permissions that migrate wrote are still there."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from django_weft.models import Schedule
from tests.databases import MIGRATE_WRITES, delete_rows, last_ids

pytestmark = pytest.mark.django_db(transaction=True)


def filled_tables() -> set[str]:
    with connection.cursor() as cursor:
        filled = set()
        for table in connection.introspection.django_table_names(only_existing=True):
            cursor.execute(f"SELECT 1 FROM {connection.ops.quote_name(table)} LIMIT 1")
            if cursor.fetchone():
                filled.add(table)
    return filled


def test_database_cleanup_deletes_what_a_test_wrote() -> None:
    """Rows in Django's and django-weft's tables, a permission a test added and its
    grant all go; the content types and permissions migrate wrote stay, ids and all."""
    written = last_ids("default")
    migrated = (
        set(ContentType.objects.values_list("pk", "app_label", "model")),
        set(Permission.objects.values_list("pk", "content_type", "codename")),
    )
    assert filled_tables() == set(MIGRATE_WRITES)
    extra = Permission.objects.create(
        codename="extra", name="Extra", content_type=ContentType.objects.get_for_model(Schedule)
    )
    user = User.objects.create_user("someone")
    user.user_permissions.add(extra)
    Schedule.objects.create(name="s", job="tests.noop", every=timedelta(hours=1))
    assert len(filled_tables()) > 4

    delete_rows("default", written)

    assert filled_tables() == set(MIGRATE_WRITES)
    assert (
        set(ContentType.objects.values_list("pk", "app_label", "model")),
        set(Permission.objects.values_list("pk", "content_type", "codename")),
    ) == migrated

"""Pieces of the few statements the hot paths write by hand, on any supported database.

The claim, the plain finish and the set-based fire are single statements the ORM cannot
express (``UPDATE ... RETURNING``, ``UPDATE ... FROM (VALUES ...)``, ``INSERT ... ON
CONFLICT DO NOTHING RETURNING``); every start's INSERT is written here too, faster than
the ORM compiles it. These helpers name tables and columns from the models'
metadata and turn Python values into what the database takes, so the statements follow
the models and each is built once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models


def table(model: type[models.Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def column(model: type[models.Model], name: str) -> str:
    """The quoted column of field ``name`` (``worker`` gives ``worker_id``)."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    assert field.column is not None
    return connection.ops.quote_name(field.column)


def prep(model: type[models.Model], name: str, value: object) -> Any:
    """``value`` as the database takes it for field ``name`` (a UUID, a moment, JSON...)."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field.get_db_prep_save(value, connection)


def from_db(model: type[models.Model], name: str, value: object) -> Any:
    """A value of field ``name`` read by a hand-written statement, as the ORM would give
    it (SQLite's text of a moment becomes an aware ``datetime``...)."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    read = field.cached_col
    for converter in [*connection.ops.get_db_converters(read), *read.get_db_converters(connection)]:
        value = converter(value, read, connection)
    return value


def typed_placeholder(model: type[models.Model], name: str) -> str:
    """``%s`` with the field's type where PostgreSQL needs it to read a VALUES list."""
    if connection.vendor != "postgresql":
        return "%s"
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return f"CAST(%s AS {field.db_type(connection)})"


def values_list(
    model: type[models.Model], names: Sequence[str], rows: Iterable[Sequence[object]]
) -> tuple[str, list[Any]]:
    """``VALUES (...), (...)`` for ``rows`` of ``names``' values, and its parameters.

    Its columns are ``column1``, ``column2``..., as both PostgreSQL and SQLite name them.
    """
    row_sql = "(" + ", ".join(typed_placeholder(model, name) for name in names) + ")"
    params: list[Any] = []
    count = 0
    for row in rows:
        params += [prep(model, name, value) for name, value in zip(names, row, strict=True)]
        count += 1
    return "VALUES " + ", ".join([row_sql] * count), params


def column_arrays(fields: Sequence[models.Field[Any, Any]]) -> str:
    """PostgreSQL's ``SELECT * FROM UNNEST(%s::type[], ...)``: rows given as one array
    per column of ``fields``.

    Django's ``bulk_create`` writes many rows so on PostgreSQL: a statement for 500 rows
    then has one placeholder per column instead of one per value, so psycopg need not
    split a long text at each ``%s`` (over 50 ms for 500 runs) and the server parses it
    as quickly as a one-row INSERT. The types lose their length (``varchar``, not
    ``varchar(150)``), so that nothing is cut short before the column checks it.
    """
    arrays = ", ".join(f"%s::{str(field.db_type(connection)).split('(')[0]}[]" for field in fields)
    return f"SELECT * FROM UNNEST({arrays})"


def count_down(model: type[models.Model], pk: object, name: str) -> int | None:
    """Take one from field ``name`` of ``model``'s row ``pk`` and return what it holds
    now (None when there is no such row): one round trip where an update and a read
    are two. The update holds the row's lock until the caller commits, so the one
    transaction that reads zero is the only one that does."""
    counter = column(model, name)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table(model)} SET {counter} = {counter} - 1 "
            f"WHERE {column(model, 'id')} = %s RETURNING {counter}",
            [prep(model, "id", pk)],
        )
        found = cursor.fetchone()
    return None if found is None else int(found[0])

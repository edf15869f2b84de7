"""The run table's indexes are the ones docs/runs.md names, and its cheap updates are HOT.

The index set is read from the database itself (``pg_indexes``, ``sqlite_master``) after
the migrations, and compared with the table in docs/runs.md, so that an index added or
dropped without its documented query fails here.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from django_weft.engine.runs.claiming import claim, deployed_pairs
from django_weft.jobs.registry import registry
from django_weft.models import Run, WorkerProcess
from django_weft.operations import start
from tests.patience import EVENTUALLY

pytestmark = pytest.mark.django_db(transaction=True)

RUNS_DOC = Path(__file__).resolve().parents[2] / "docs" / "runs.md"
TABLE = Run._meta.db_table
#: Indexes that SQLite makes itself, as ``sqlite_autoindex_*``, for its own constraints.
SQLITE_OWN = {f"{TABLE}_pkey", f"{TABLE}_state_id_key"}


def documented_indexes() -> set[str]:
    """The first column of the table under "The run table's indexes" in docs/runs.md."""
    text = RUNS_DOC.read_text()
    section = text.split("## The run table's indexes\n", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^\| `([a-z0-9_]+)` \|", section, flags=re.MULTILINE)
    assert names, "docs/runs.md has no index table"
    return set(names)


def table_indexes() -> tuple[set[str], int]:
    """The run table's named indexes, and how many the database made on its own."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [TABLE])
        else:
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = %s", [TABLE]
            )
        names = {name for (name,) in cursor.fetchall()}
    own = {name for name in names if name.startswith("sqlite_autoindex_")}
    return names - own, len(own)


def test_the_run_tables_indexes_are_the_documented_ones() -> None:
    names, own = table_indexes()
    if connection.vendor == "postgresql":
        assert (names, own) == (documented_indexes(), 0)
        assert not any(name.endswith("_like") for name in names), "no pattern-ops twins"
    else:
        assert (names, own) == (documented_indexes() - SQLITE_OWN, len(SQLITE_OWN))


def table_options() -> list[str]:
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            return []
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = %s", [TABLE])
        (options,) = cursor.fetchone()
        return list(options or [])


def update_counts() -> tuple[int, int]:
    """(updates, HOT updates) of the run table, as PostgreSQL's statistics have them now."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = %s",
            [TABLE],
        )
        updated, hot = cursor.fetchone()
        return int(updated), int(hot)


#: Runs the HOT test updates: few enough that a fresh page holds each row's three
#: versions (inserted, claimed, abort requested) however the server prunes dead ones.
HOT_RUNS = 5


def test_updates_that_change_no_indexed_column_are_hot() -> None:
    """Abort requests of claimed runs write no index on PostgreSQL (fillfactor 80 leaves
    them room on the page); on SQLite they are plain updates of the row."""
    if connection.vendor == "postgresql":
        # Fresh pages: whether the dead rows of earlier tests were pruned yet depends on
        # what else the server is doing; only an indexed column's change may count here.
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {TABLE} CASCADE")
    now = timezone.now()
    worker = WorkerProcess.objects.create(hostname="hot", pid=1, started_at=now, last_beat=now)
    noop = registry.get("tests.noop")
    for _ in range(HOT_RUNS):
        start(noop)
    runs = claim(deployed_pairs([noop]), limit=HOT_RUNS, worker=worker, now=now, queues=None)
    assert len(runs) == HOT_RUNS
    if connection.vendor != "postgresql":
        for run in runs:
            assert run.record_abort_request(now)
        assert Run.objects.filter(abort_requested_at=now).count() == HOT_RUNS
        return
    assert table_options() == ["fillfactor=80"]
    before = update_counts()
    for run in runs:
        assert run.record_abort_request(now)
    # Statistics reach the shared view asynchronously: wait for the updates to show.
    deadline = time.monotonic() + EVENTUALLY
    while (counts := update_counts())[0] < before[0] + HOT_RUNS and time.monotonic() < deadline:
        time.sleep(0.2)
    updated, hot = counts[0] - before[0], counts[1] - before[1]
    assert updated == HOT_RUNS
    assert hot == HOT_RUNS, f"{hot} of {updated} abort requests were HOT"

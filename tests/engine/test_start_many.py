"""``start_many``: a fan-out of runs in one transaction and one INSERT, each item checked.

On both databases (``WEFT_TEST_DATABASE=postgres`` for PostgreSQL): the batch answers
as that many ``start()`` calls would, keys and concurrency limits included, and a bad
item refuses the whole batch, naming its index, with nothing written.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import django_weft
from django_weft import operations
from django_weft.engine.runs.starting import StartRequest
from django_weft.exceptions import (
    ConcurrencyLimitReached,
    Forbidden,
    IdempotencyKeyReused,
    InvalidArgs,
    InvalidBatchItem,
    InvalidIdempotencyKey,
)
from django_weft.jobs.registry import registry
from django_weft.models import AuditRecord, Document, Run, RunStatus
from django_weft.signals import run_started
from tests.live_client import CommunicatorSocket, open_socket
from tests.threads import concurrently

pytestmark = pytest.mark.django_db(transaction=True)

RUN_TABLE = Run._meta.db_table


def inserts_into(queries: CaptureQueriesContext, table: str) -> int:
    return sum(query["sql"].startswith(f'INSERT INTO "{table}"') for query in queries)


@pytest.fixture
def started() -> Iterator[list[Run]]:
    """The runs ``run_started`` announced, in order."""
    announced: list[Run] = []

    def receive(sender: object, run: Run, **kwargs: object) -> None:
        announced.append(run)

    run_started.connect(receive)
    yield announced
    run_started.disconnect(receive)


def test_start_many_is_public_and_writes_the_batch_with_one_insert(started: list[Run]) -> None:
    """500 runs: one INSERT (or as few as the database's parameter limit allows: Django
    5.2 caps SQLite at 999 parameters), in the items' order, queued, each announced once."""
    items = [{"seconds": index} for index in range(500)]
    with CaptureQueriesContext(connection) as queries:
        runs = django_weft.start_many("tests.sleep", items, priority=7)
    per_insert = connection.ops.bulk_batch_size(Run._meta.concrete_fields, runs)
    assert inserts_into(queries, RUN_TABLE) == math.ceil(500 / min(per_insert, 500))
    assert [run.args for run in runs] == [{"seconds": float(i)} for i in range(500)]
    stored = {run.pk: run for run in Run.objects.all()}
    assert len(stored) == 500
    assert {(run.status, run.priority, run.job) for run in stored.values()} == {
        (RunStatus.QUEUED, 7, "tests.sleep")
    }
    assert [run.pk for run in started] == [run.pk for run in runs]


def test_start_many_of_no_items_starts_nothing() -> None:
    assert django_weft.start_many("tests.noop", []) == []
    assert not Run.objects.exists()


def test_start_many_gives_each_run_its_state_document() -> None:
    """A job with a state gets one document per run, written with one INSERT too."""
    items = [{"label": f"l{index}", "secret": "s"} for index in range(3)]
    with CaptureQueriesContext(connection) as queries:
        runs = django_weft.start_many("tests.private", items)
    assert inserts_into(queries, Document._meta.db_table) == 1
    for run in Run.objects.select_related("state").filter(pk__in=[r.pk for r in runs]):
        assert run.state is not None
        assert (run.state.key, run.state.data) == (f"run:{run.pk}", {"note": "for the owner"})


def test_start_many_stores_every_column_as_each_run_holds_it() -> None:
    """Every column of every row reads back as the returned run holds it: owners or none,
    keys or none, queues, a not-before moment, state documents, and args with quotes,
    braces and backslashes (PostgreSQL is sent many rows as one array per column)."""
    owner = get_user_model().objects.create_user("fan-out owner")
    later = timezone.now() + timedelta(hours=1)
    job = registry.get("tests.private")
    requests = [
        StartRequest(
            job,
            {"label": f"l{index}", "secret": 'a "quote", {braces}, \\ and \u00e9'},
            key=f"k{index}" if index % 2 else None,
            owner=owner if index % 3 else None,
            priority=index - 2,
            queue="side" if index % 2 else None,
            not_before=later if index % 2 else None,
        )
        for index in range(6)
    ]
    runs = [run for run, _ in operations.start_many_or_get(requests)]
    columns = [field.attname for field in Run._meta.concrete_fields]
    for run in runs:
        stored = Run.objects.get(pk=run.pk)
        assert {name: getattr(stored, name) for name in columns} == {
            name: getattr(run, name) for name in columns
        }
    assert {run.owner_id for run in runs} == {None, owner.pk}
    assert all(run.state_id is not None for run in runs)


def test_start_many_bad_args_refuse_the_batch_naming_the_item_and_field() -> None:
    items = [{"seconds": 1}, {"seconds": 2}, {"seconds": "soon"}, {"seconds": -1}]
    with pytest.raises(InvalidBatchItem) as refused:
        django_weft.start_many("tests.sleep", items)
    assert refused.value.index == 2
    assert list(refused.value.fields) == ["args.seconds"]
    assert isinstance(refused.value.error, InvalidArgs)
    assert "item 2 of the batch, args.seconds" in str(refused.value)
    code, _, fields = operations.describe_refusal(refused.value)
    assert (code, list(fields)) == ("invalid", ["items.2.args.seconds"])
    assert not Run.objects.exists()


def test_start_many_bad_key_or_priority_refuses_the_batch() -> None:
    with pytest.raises(InvalidBatchItem) as refused:
        django_weft.start_many("tests.noop", [{}, {}], keys=["a", " "])
    assert (refused.value.index, list(refused.value.fields)) == (1, ["key"])
    assert isinstance(refused.value.error, InvalidIdempotencyKey)
    with pytest.raises(InvalidBatchItem) as refused:
        django_weft.start_many("tests.noop", [{}], priority=101)
    assert (refused.value.index, list(refused.value.fields)) == (0, ["priority"])
    with pytest.raises(ValueError, match="keys has 1 items and items 2"):
        django_weft.start_many("tests.noop", [{}, {}], keys=["a"])
    assert not Run.objects.exists()


def test_start_many_keys_answer_earlier_runs_and_earlier_items(started: list[Run]) -> None:
    """A key held by a run answers it; a key repeated in the batch answers its first item."""
    first = django_weft.start("tests.sleep", {"seconds": 1}, key="old")
    started.clear()
    answers = operations.start_many_or_get(
        [
            operations.StartRequest(registry.get("tests.sleep"), {"seconds": 1}, key="old"),
            operations.StartRequest(registry.get("tests.sleep"), {"seconds": 2}, key="new"),
            operations.StartRequest(registry.get("tests.sleep"), {"seconds": 2}, key="new"),
            operations.StartRequest(registry.get("tests.sleep"), {"seconds": 3}),
        ]
    )
    assert [created for _, created in answers] == [False, True, False, True]
    assert answers[0][0].pk == first.pk
    assert answers[1][0].pk == answers[2][0].pk
    assert Run.objects.count() == 3
    assert [run.pk for run in started] == [answers[1][0].pk, answers[3][0].pk]


@pytest.mark.parametrize(
    ("keys", "index"), [(["old", "x"], 0), (["x", "x"], 1)], ids=["earlier run", "earlier item"]
)
def test_start_many_key_with_other_args_refuses_the_batch(keys: list[str], index: int) -> None:
    django_weft.start("tests.sleep", {"seconds": 9}, key="old")
    with pytest.raises(IdempotencyKeyReused, match=rf"\(item {index} of the batch\)") as refused:
        django_weft.start_many("tests.sleep", [{"seconds": 1}, {"seconds": 2}], keys=keys)
    assert refused.value.index == index
    assert Run.objects.count() == 1


def test_start_many_honours_the_concurrency_limit_per_key() -> None:
    """One per owner: a batch of two for one owner is refused whole, naming the second."""
    users = get_user_model().objects
    alice, bob = users.create_user("alice"), users.create_user("bob")
    job = registry.get("tests.one_per_owner")
    with pytest.raises(ConcurrencyLimitReached, match=r"item 1 of the batch") as refused:
        operations.start_many_or_get(
            [
                operations.StartRequest(job, {"label": "a"}, owner=alice),
                operations.StartRequest(job, {"label": "a2"}, owner=alice),
            ]
        )
    assert refused.value.index == 1
    assert not Run.objects.exists()
    django_weft.start(job, {"label": "a"}, owner=alice)
    with pytest.raises(ConcurrencyLimitReached) as refused:
        operations.start_many_or_get(
            [
                operations.StartRequest(job, {"label": "b"}, owner=bob),
                operations.StartRequest(job, {"label": "a3"}, owner=alice),
            ]
        )
    assert refused.value.index == 1
    assert Run.objects.count() == 1
    answers = operations.start_many_or_get(
        [operations.StartRequest(job, {"label": "b"}, owner=bob)]
    )
    assert answers[0][1] is True
    assert Run.objects.count() == 2


def test_start_many_racing_batches_with_one_key_make_one_run() -> None:
    """Batches racing with the same keys all get the same runs; the database holds one each."""

    def batch() -> list[Any]:
        runs = django_weft.start_many("tests.sleep", [{"seconds": 0}] * 2, keys=["r1", "r2"])
        return [run.pk for run in runs]

    results = concurrently(4, batch)
    assert all(not isinstance(r, Exception) for r in results), results
    assert len({tuple(r) for r in results}) == 1
    assert Run.objects.count() == 2


def test_start_many_racing_batches_respect_the_concurrency_limit() -> None:
    """Racing batches of a one-at-a-time job: one batch of one run wins, the rest refused."""
    results = concurrently(
        3, lambda: django_weft.start_many("shell.run", [{"command": "ls", "lines": 1}])
    )
    refused = [r for r in results if isinstance(r, ConcurrencyLimitReached)]
    assert len(refused) == 2, results
    assert Run.objects.count() == 1


def test_start_many_wakes_workers_once_per_batch() -> None:
    """PostgreSQL: the 1,200 rows' INSERT sends the workers one NOTIFY, at the commit."""
    if connection.vendor != "postgresql":
        runs = django_weft.start_many("tests.noop", [{}] * 1200)
        assert len(runs) == Run.objects.count() == 1200  # SQLite's workers poll
        return
    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"],
        user=settings["USER"],
        dbname=settings["NAME"],
        autocommit=True,
    ) as listener:
        listener.execute("LISTEN django_weft")
        django_weft.start_many("tests.noop", [{}] * 1200)
        heard = [n.payload for n in listener.notifies(timeout=2.0)]
    assert heard == ["runs"]


def test_start_many_for_checks_the_user_and_records_each_new_run() -> None:
    users = get_user_model().objects
    nobody = users.create_user("nobody")
    with pytest.raises(Forbidden):
        operations.start_many_for(nobody, [operations.StartRequest(registry.get("tests.noop"))])
    starter = users.create_user("starter")
    starter.user_permissions.add(Permission.objects.get(codename="add_run"))
    starter = users.get(pk=starter.pk)
    job = registry.get("tests.noop")
    answers = operations.start_many_for(
        starter,
        [
            operations.StartRequest(job, key="a"),
            operations.StartRequest(job, key="a"),
            operations.StartRequest(job),
        ],
    )
    assert [created for _, created in answers] == [True, False, True]
    assert {run.owner_id for run in Run.objects.all()} == {starter.pk}
    assert AuditRecord.objects.count() == 2


@pytest.mark.asyncio
async def test_start_many_publishes_each_run_to_the_live_views(
    sockets: list[CommunicatorSocket],
) -> None:
    """An operator's socket gets a run frame for every run of the batch."""

    def operator() -> Any:
        user = get_user_model().objects.create_user("op")
        user.user_permissions.add(Permission.objects.get(codename="view_run"))
        return get_user_model().objects.get(pk=user.pk)

    socket = await open_socket(sockets, await sync_to_async(operator)())
    runs = await django_weft.astart_many("tests.sleep", [{"seconds": i} for i in range(5)])
    seen = {(await socket.until(lambda frame: frame["type"] == "run"))["run"]["id"] for _ in runs}
    assert seen == {str(run.pk) for run in runs}

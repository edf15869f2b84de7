"""Fair share (DESIGN.md section 10): within a queue with a fair share, keys take turns
at the claim, round robin or weighted, so a key's backlog cannot starve a key started
after it; priorities still order a key's runs; a queue without one keeps its order; a
key with nothing queued comes in at the front; a start's placing and the claim each read
an index; a fair share is set through the API and the console, checked, on record."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from django_weft.engine.limits import fairness
from django_weft.engine.runs.claiming import claim, deployed_pairs
from django_weft.jobs.registry import registry
from django_weft.models import AuditAction, AuditRecord, FlowLimit, Run, RunStatus, WorkerProcess
from django_weft.operations import start, start_many

pytestmark = pytest.mark.django_db(transaction=True)

SYNC = "tests.limits.sync"


@pytest.fixture
def process() -> WorkerProcess:
    now = timezone.now()
    return WorkerProcess.objects.create(hostname="h", pid=1, started_at=now, last_beat=now)


def share(**fields: Any) -> FlowLimit:
    given = {"name": "fair", "queue": "default", **fields}
    return FlowLimit.objects.create(fair_share=True, updated_at=timezone.now(), **given)


def sync(tenant: str, count: int = 1, **options: Any) -> list[Run]:
    return [
        start(registry.get(SYNC), {"tenant": tenant, "number": n}, **options) for n in range(count)
    ]


def drain(process: WorkerProcess, now: datetime | None = None, limit: int = 100) -> list[str]:
    """The tenants of the runs one claim takes, in claim order."""
    taken = claim(
        deployed_pairs(registry),
        limit=limit,
        worker=process,
        now=now or timezone.now(),
        queues=None,
    )
    return [run.args["tenant"] for run in taken]


def test_a_keys_backlog_does_not_starve_keys_started_after_it(process: WorkerProcess) -> None:
    share()
    sync("a", 20)
    sync("b", 3)
    sync("c", 3)
    assert drain(process) == ["a", "b", "c"] * 3 + ["a"] * 17


def test_weights_give_a_key_that_many_turns_a_round(process: WorkerProcess) -> None:
    share(weights={"a": 3})
    sync("a", 12)
    sync("b", 4)
    assert drain(process) == ["a", "b"] + ["a", "a", "a", "b"] * 3 + ["a", "a"]


def test_priorities_still_order_a_keys_runs(process: WorkerProcess) -> None:
    share()
    sync("a", 3)
    [urgent] = sync("a", priority=10)
    sync("b", 1)
    taken = claim(
        deployed_pairs(registry), limit=10, worker=process, now=timezone.now(), queues=None
    )
    assert taken[0].pk == urgent.pk
    assert [run.args["tenant"] for run in taken[1:]] == ["a", "b", "a", "a"]


def test_a_queue_without_a_fair_share_keeps_its_order(process: WorkerProcess) -> None:
    share(name="other", queue="elsewhere")
    sync("a", 4)
    sync("b", 2)
    assert not Run.objects.filter(turn_at__isnull=False).exists()
    assert drain(process) == ["a"] * 4 + ["b"] * 2


def test_a_key_with_nothing_queued_comes_in_at_the_front(process: WorkerProcess) -> None:
    share()
    sync("a", 10)
    assert drain(process, limit=4) == ["a"] * 4
    sync("b", 2)
    assert drain(process) == ["a", "b", "a", "b"] + ["a"] * 4


def test_runs_started_together_take_their_turns_too(process: WorkerProcess) -> None:
    """The bulk start writes its runs in one statement; they are placed all the same."""
    share()
    job = registry.get(SYNC)
    start_many(job, [{"tenant": "a", "number": n} for n in range(6)])
    start_many(job, [{"tenant": tenant, "number": n} for tenant in "bc" for n in range(2)])
    order = drain(process)
    # A round's keys started in one statement share their turn (and their start): which
    # of them goes first in the round is the database's choice.
    assert [sorted(order[:3]), sorted(order[3:6]), order[6:]] == [
        ["a", "b", "c"],
        ["a", "b", "c"],
        ["a"] * 4,
    ]


def test_a_fair_share_alone_holds_nothing_back(process: WorkerProcess) -> None:
    """A fair share is kept by the runs' turns, not counted at the claim: no lock, no
    run left queued by it."""
    share()
    sync("a", 5)
    assert len(drain(process, limit=5)) == 5
    assert not Run.objects.filter(status=RunStatus.QUEUED).exists()


def test_placing_a_start_reads_the_indexes_over_turns(process: WorkerProcess) -> None:
    """However long another key's backlog, a start finds the queue's front and its own
    key's last turn at an end of an index (PostgreSQL, SQLite)."""
    share()
    job = registry.get(SYNC)
    start_many(job, [{"tenant": "a", "number": n} for n in range(3000)])
    statements: list[tuple[str, tuple[object, ...]]] = []

    def keep(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "turn_at" in sql and sql.lstrip().startswith("SELECT"):
            statements.append((sql, tuple(params)))
        return execute(sql, params, many, context)

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(Run._meta.db_table)}")
    with connection.execute_wrapper(keep):
        sync("b")
    explain = "EXPLAIN " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN "
    plans = []
    for statement, params in statements:
        with connection.cursor() as cursor:
            cursor.execute(explain + statement, params)
            plans.append(
                "\n".join(" ".join(str(value) for value in row) for row in cursor.fetchall())
            )
    [front, last] = plans
    assert "weft_run_turns" in front, front
    assert "weft_run_key_turns" in last, last
    for plan in plans:
        assert "Sort" not in plan, plan
        assert "TEMP B-TREE" not in plan, plan
    assert (
        Run.objects.latest("turn_at").turn_at - Run.objects.earliest("turn_at").turn_at
        == fairness.STEP * 2999
    ), "the key's turns a step apart"


def operator(*codenames: str) -> Client:
    made: Any = get_user_model().objects.create_user("ops", is_staff=True)
    made.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(made)
    return client


def test_the_api_sets_a_fair_share_with_weights_on_record() -> None:
    client = operator("add_flowlimit", "change_flowlimit")
    body = {"name": "imports", "queue": "imports", "fair_share": True, "weights": {"big": 2}}
    made = client.post("/api/weft/limits/", body, content_type="application/json")
    assert made.status_code == 201, made.content
    assert (made.json()["fair_share"], made.json()["weights"]) == (True, {"big": 2})
    url = f"/api/weft/limits/{made.json()['id']}/"
    changed = client.patch(url, {"weights": {"big": 5}}, content_type="application/json")
    assert changed.status_code == 200, changed.content
    assert FlowLimit.objects.get().weights == {"big": 5}
    assert list(AuditRecord.objects.order_by("pk").values_list("action", flat=True)) == [
        AuditAction.LIMIT_CREATE,
        AuditAction.LIMIT_EDIT,
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "job": SYNC, "fair_share": True}, "fair_share"),
        ({"name": "x", "queue": "q", "concurrency": 1, "weights": {"a": 2}}, "weights"),
        ({"name": "x", "queue": "q", "fair_share": True, "weights": {"a": 0}}, "weights"),
        ({"name": "x", "queue": "q", "fair_share": True, "weights": {"a": 1.5}}, "weights"),
        ({"name": "x", "queue": "q", "fair_share": True, "weights": ["a"]}, "weights"),
        ({"name": "x", "queue": "q", "fair_share": True, "weights": {"a": 1001}}, "weights"),
    ],
)
def test_a_bad_fair_share_is_refused_naming_the_field(body: dict[str, Any], field: str) -> None:
    client = operator("add_flowlimit")
    refused = client.post("/api/weft/limits/", body, content_type="application/json")
    assert refused.status_code == 400, refused.content
    assert field in refused.json(), refused.json()
    assert not FlowLimit.objects.exists()
    assert not AuditRecord.objects.exists()


def test_the_console_sets_a_fair_share_and_lists_its_weights() -> None:
    client = operator("add_flowlimit", "change_flowlimit", "view_flowlimit")
    added = client.post(
        reverse("admin:django_weft_flowlimit_add"),
        {
            "name": "imports",
            "job": "",
            "queue": "imports",
            "concurrency": "",
            "rate": "",
            "period": "",
            "fair_share": "on",
            "weights": '{"big": 3}',
        },
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    assert FlowLimit.objects.get().weights == {"big": 3}
    listed = client.get(reverse("admin:django_weft_flowlimit_changelist")).content.decode()
    assert "fair share between keys (big \u00d73)" in listed

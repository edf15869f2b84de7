"""Flow limits through every door (DESIGN.md section 10): the API and the console
create, change and delete them through the service layer, each change on the audit
trail and obeyed at the next claim; a bad limit is refused naming the field, nothing
written; a user without the model's permission is refused; a queued run's page says
which limit holds it and, for a rate, when its next slot comes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from django_weft.jobs.registry import registry
from django_weft.models import AuditAction, AuditRecord, FlowLimit, Run, RunStatus
from django_weft.operations import start
from django_weft.testing import Rehearsal
from django_weft.timing import clocks

pytestmark = pytest.mark.django_db(transaction=True)


def user(name: str, *codenames: str) -> Any:
    made: Any = get_user_model().objects.create_user(name, is_staff=True)
    made.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return made


def signed_in(who: Any) -> Client:
    client = Client()
    client.force_login(who)
    return client


def test_the_api_creates_changes_and_deletes_a_limit_on_record(rehearsal: Rehearsal) -> None:
    operator = signed_in(
        user("ops", "add_flowlimit", "change_flowlimit", "delete_flowlimit", "view_run")
    )
    body = {"name": "noop", "job": "tests.noop", "concurrency": 1}
    made = operator.post("/api/weft/limits/", body, content_type="application/json")
    assert made.status_code == 201, made.content
    assert made.json()["updated_by"] == "ops"
    runs = [start(registry.get("tests.noop")) for _ in range(3)]
    rehearsal.advance(timedelta(0))
    assert Run.objects.filter(pk__in=[r.pk for r in runs], status=RunStatus.DONE).count() == 3
    # Held runs: a long concurrency of one, edited to a rate while they wait.
    url = f"/api/weft/limits/{made.json()['id']}/"
    changed = operator.patch(
        url, {"concurrency": None, "rate": 2, "period": "01:00:00"}, content_type="application/json"
    )
    assert changed.status_code == 200, changed.content
    assert changed.json()["period"] == "01:00:00"
    more = [start(registry.get("tests.noop")) for _ in range(3)]
    rehearsal.advance(timedelta(0))
    done = Run.objects.filter(pk__in=[r.pk for r in more], status=RunStatus.DONE)
    assert done.count() == 2, "the edit is obeyed at the next claim"
    assert operator.delete(url).status_code == 204
    rehearsal.advance(timedelta(0))
    assert done.count() == 3, "nothing holds it back once the limit is gone"
    actions = list(AuditRecord.objects.order_by("pk").values_list("action", "text"))
    assert actions == [
        (AuditAction.LIMIT_CREATE, "Created"),
        (AuditAction.LIMIT_EDIT, "Changed concurrency, rate, period"),
        (AuditAction.LIMIT_DELETE, "Deleted"),
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "concurrency": 1}, "job"),
        ({"name": "x", "job": "tests.nope", "concurrency": 1}, "job"),
        ({"name": "x", "job": "tests.noop"}, "concurrency"),
        ({"name": "x", "job": "tests.noop", "rate": 5}, "period"),
        ({"name": "x", "job": "tests.noop", "concurrency": 0}, "concurrency"),
        ({"name": "two words", "job": "tests.noop", "concurrency": 1}, "name"),
        ({"name": "x", "job": "tests.noop", "concurrency": 1, "burst": 3}, "burst"),
    ],
)
def test_a_bad_limit_is_refused_naming_the_field(body: dict[str, Any], field: str) -> None:
    operator = signed_in(user("ops", "add_flowlimit"))
    refused = operator.post("/api/weft/limits/", body, content_type="application/json")
    assert refused.status_code == 400, refused.content
    assert field in refused.json()
    assert not FlowLimit.objects.exists()
    assert not AuditRecord.objects.exists()


def test_without_the_models_permission_a_write_is_refused() -> None:
    FlowLimit.objects.create(name="noop", job="tests.noop", concurrency=1, updated_at=clocks.now())
    stranger = signed_in(user("guest"))
    listed = stranger.get("/api/weft/limits/")
    assert listed.status_code == 200
    body = {"name": "y", "job": "tests.noop", "concurrency": 1}
    refused = stranger.post("/api/weft/limits/", body, content_type="application/json")
    assert refused.status_code == 403
    assert "add_flowlimit" in refused.json()["detail"]
    assert FlowLimit.objects.count() == 1


def test_the_console_edits_a_limit_and_shows_its_use() -> None:
    operator = user("ops", "add_flowlimit", "change_flowlimit", "view_flowlimit")
    client = signed_in(operator)
    added = client.post(
        reverse("admin:django_weft_flowlimit_add"),
        {
            "name": "noop",
            "job": "tests.noop",
            "queue": "",
            "concurrency": "2",
            "rate": "",
            "period": "",
        },
    )
    assert added.status_code == 302, added.content.decode()[:2000]
    limit = FlowLimit.objects.get()
    assert (limit.concurrency, limit.updated_by) == (2, operator)
    refused = client.post(
        reverse("admin:django_weft_flowlimit_change", args=[limit.pk]),
        {
            "name": "noop",
            "job": "tests.noop",
            "queue": "",
            "concurrency": "",
            "rate": "5",
            "period": "",
        },
    )
    assert refused.status_code == 200
    assert "A rate needs its period" in refused.content.decode()
    assert FlowLimit.objects.get().rate is None, "nothing written"
    listed = client.get(reverse("admin:django_weft_flowlimit_changelist")).content.decode()
    assert "0 of 2 running" in listed
    assert "job tests.noop" in listed
    assert AuditRecord.objects.get().action == AuditAction.LIMIT_CREATE


def test_a_held_runs_page_says_which_limit_holds_it(rehearsal: Rehearsal) -> None:
    FlowLimit.objects.create(
        name="partner",
        job="tests.noop",
        rate=1,
        period=timedelta(minutes=1),
        updated_at=clocks.now(),
    )
    for _ in range(2):
        start(registry.get("tests.noop"))
    rehearsal.advance(timedelta(seconds=0))
    rehearsal.advance(timedelta(seconds=12))
    first = Run.objects.get(status=RunStatus.DONE)
    second = Run.objects.get(status=RunStatus.QUEUED)
    client = signed_in(user("guest", "view_run"))
    page = client.get(reverse("admin:django_weft_run_change", args=[second.pk])).content.decode()
    assert (
        "Waits for the rate limit partner: 1 of 1 begun in its period; next slot in 48.0 s." in page
    )
    done = client.get(reverse("admin:django_weft_run_change", args=[first.pk])).content.decode()
    assert "Waits for the rate limit" not in done
    overview = client.get("/admin/django_weft/overview/").content.decode()
    row = overview[overview.index('data-limit="partner"') :]
    row = row[: row.index("</tr>")]
    assert "1 of 1 begun" in row
    assert "1 queued run<" in row, "the rate holds the second run back"


def test_the_overview_lists_each_limit_with_its_use_and_what_it_holds() -> None:
    FlowLimit.objects.create(name="one", job="tests.noop", concurrency=1, updated_at=clocks.now())
    FlowLimit.objects.create(
        name="imports", queue="imports", fair_share=True, updated_at=clocks.now()
    )
    for _ in range(3):
        start(registry.get("tests.noop"))
    Run.objects.filter(pk=Run.objects.order_by("created_at")[0].pk).update(status=RunStatus.RUNNING)
    client = signed_in(user("ops", "view_run"))
    overview = client.get("/admin/django_weft/overview/").content.decode()
    one = overview[overview.index('data-limit="one"') :]
    one = one[: one.index("</tr>")]
    assert "1 of 1 running" in one
    assert "2 queued runs" in one
    share = overview[overview.index('data-limit="imports"') :]
    share = share[: share.index("</tr>")]
    assert "fair share between keys" in share
    assert "0 queued runs" in share


def test_a_queues_concurrency_is_shown_and_changed_from_the_overview() -> None:
    """The overview's queues say how many of a queue's runs may run at once ("0 of 2")
    and link to that limit; a queue without one ("0 of ∞") links to a new limit's form,
    filled in for it, for those who may add limits (others read the running count)."""
    FlowLimit.objects.create(
        name="cpu.at-once", queue="cpu", concurrency=2, updated_at=clocks.now()
    )
    FlowLimit.objects.create(
        name="cpu.per-tenant", queue="cpu", per_key=True, concurrency=1, updated_at=clocks.now()
    )
    operator = signed_in(user("ops", "view_run", "view_flowlimit", "add_flowlimit"))
    overview = operator.get("/admin/django_weft/overview/").content.decode()
    cpu = overview[overview.index('data-queue="cpu"') :]
    cpu = cpu[: cpu.index("</tr>")]
    limit = FlowLimit.objects.get(name="cpu.at-once")
    assert f'href="/admin/django_weft/flowlimit/{limit.pk}/change/"' in cpu
    assert "0 of 2" in cpu
    default = overview[overview.index('data-queue="default"') :]
    default = default[: default.index("</tr>")]
    add = "/admin/django_weft/flowlimit/add/?queue=default&amp;name=default.at-once"
    assert f'href="{add}"' in default
    form = operator.get(add.replace("&amp;", "&")).content.decode()
    assert 'name="queue" value="default"' in form
    assert 'name="name" value="default.at-once"' in form
    assert "of ∞</a>" in default
    reader = signed_in(user("reader", "view_run"))
    overview = reader.get("/admin/django_weft/overview/").content.decode()
    default = overview[overview.index('data-queue="default"') :]
    default = default[: default.index("</tr>")]
    assert "flowlimit/add" not in default
    assert "of ∞" not in default

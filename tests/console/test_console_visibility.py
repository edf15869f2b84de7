"""One view of a run in every admin page: the Document admin, the run list's search, its
filters and its columns show and match only what the viewer may see of each run.

Principals, all staff: ``root`` (a superuser); ``reader`` (view_document: sees
application documents, and other people's runs as a guest); ``owner`` (view_document,
owns a run); ``operator`` (change_run: sees other people's runs as a guest, may abort
them); ``auditor`` (view_run and view_document: every run in full); ``remover``
(view_document and delete_document).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from django_weft.models import Document, Run, Schedule
from django_weft.operations import start
from tests.console.test_console_runs import client_of, staff
from tests.jobs import private

pytestmark = pytest.mark.django_db

DOCUMENTS = "/admin/django_weft/document/"
RUNS = "/admin/django_weft/run/"


@pytest.fixture
def users() -> dict[str, Any]:
    return {
        "root": get_user_model().objects.create_superuser("root", "root@example.com", "pw"),
        "reader": staff("reader", "view_document"),
        "owner": staff("owner", "view_document", "add_run"),
        "operator": staff("operator", "change_run"),
        "auditor": staff("auditor", "view_run", "view_document"),
        "remover": staff("remover", "view_document", "delete_document"),
    }


def private_run(owner: Any, secret: str = "hunter2", key: str | None = None) -> Run:
    return start(private, {"label": "nightly", "secret": secret}, owner=owner, key=key)


def state_of(run: Run) -> Document:
    assert run.state is not None
    Document.objects.filter(pk=run.state.pk).update(data={"note": "the owner's output"})
    return Document.objects.get(pk=run.state.pk)


def document_page(client: Client, document: Document) -> Any:
    return client.get(reverse("admin:django_weft_document_change", args=[document.pk]))


# -- the Document admin ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "in_full"),
    [("root", True), ("owner", True), ("auditor", True), ("reader", False)],
)
def test_console_run_state_document_is_shown_as_the_run_is(
    users: dict[str, Any], who: str, in_full: bool
) -> None:
    """A run's state: in full to its owner and to view_run; to anyone else the guest view
    of the run, which has no state (no data, no revision)."""
    document = state_of(private_run(users["owner"]))
    Document.objects.filter(pk=document.pk).update(revision=987654321)
    response = document_page(client_of(users[who]), document)
    page = response.content.decode()
    assert response.status_code == 200
    assert document.key in page
    assert ("the owner&#x27;s output" in page) is in_full
    assert ("987654321" in page) is in_full
    assert ("shown to the run&#x27;s owner and to users with django_weft.view_run" in page) is (
        not in_full
    )


def test_console_state_document_whose_run_is_gone_is_shown_to_view_run_only(
    users: dict[str, Any],
) -> None:
    orphan = Document.objects.create(key="run:gone", schema="s", data={"note": "left over"})
    assert "left over" in document_page(client_of(users["auditor"]), orphan).content.decode()
    assert "left over" not in document_page(client_of(users["reader"]), orphan).content.decode()


def test_console_application_documents_keep_their_rules(users: dict[str, Any]) -> None:
    """view_document reads an application document in full; delete_document deletes it."""
    document = Document.objects.create(key="site:menu", schema="menu", data={"items": ["home"]})
    page = document_page(client_of(users["reader"]), document).content.decode()
    assert "&quot;home&quot;" in page
    assert 'name="_save"' not in page
    delete = reverse("admin:django_weft_document_delete", args=[document.pk])
    assert client_of(users["reader"]).post(delete, {"post": "yes"}).status_code == 403
    assert client_of(users["remover"]).post(delete, {"post": "yes"}).status_code == 302
    assert not Document.objects.filter(pk=document.pk).exists()


def test_console_nobody_edits_or_deletes_a_run_state_document(users: dict[str, Any]) -> None:
    """Not even a superuser: the state is the run's. A bulk delete that selects one
    deletes nothing at all."""
    run = private_run(users["owner"])
    document = state_of(run)
    menu = Document.objects.create(key="site:menu", schema="menu")
    for who in ("root", "remover", "owner"):
        client = client_of(users[who])
        delete = reverse("admin:django_weft_document_delete", args=[document.pk])
        assert client.get(delete).status_code == 403
        assert client.post(delete, {"post": "yes"}).status_code == 403
        change = reverse("admin:django_weft_document_change", args=[document.pk])
        client.post(change, {"key": "run:mine", "schema": "x", "data": "{}"})
        assert 'name="_save"' not in client.get(change).content.decode()
        bulk = client.post(
            DOCUMENTS,
            {
                "action": "delete_selected",
                "_selected_action": [document.pk, menu.pk],
                "post": "yes",
            },
        )
        # Refused outright; the owner, without delete_document, is not offered the action.
        assert bulk.status_code == (200 if who == "owner" else 403), who
    assert Document.objects.get(pk=document.pk).data == {"note": "the owner's output"}
    assert Document.objects.get(pk=document.pk).key == document.key
    assert Document.objects.filter(pk=menu.pk).exists()
    assert Run.objects.get(pk=run.pk).state_id == document.pk


def test_console_document_list_columns_and_filters_follow_the_viewer(
    users: dict[str, Any],
) -> None:
    """Who does not see every run in full gets no revision or last-change column (so
    cannot sort by them) and cannot filter on a document's data or revision."""
    document = state_of(private_run(users["root"]))
    reader, auditor = client_of(users["reader"]), client_of(users["auditor"])
    listed = reader.get(DOCUMENTS).content.decode()
    assert document.key in listed
    assert "column-revision" not in listed
    assert "column-updated_at" not in listed
    assert "column-revision" in auditor.get(DOCUMENTS).content.decode()
    for lookup in ("data__icontains", "data__note__startswith", "revision__gte"):
        value = "0" if lookup.startswith("revision") else "the"
        assert reader.get(DOCUMENTS, {lookup: value}).status_code == 400, lookup
        assert auditor.get(DOCUMENTS, {lookup: value}).status_code == 200, lookup
    assert reader.get(DOCUMENTS, {"key__startswith": "run:"}).status_code == 200
    assert reader.get(DOCUMENTS, {"q": "the owner"}).content.decode().count(document.key) == 0


# -- the run list ---------------------------------------------------------------------------


def listed(client: Client, **params: str) -> str:
    response = client.get(RUNS, params)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_console_run_search_reads_private_fields_only_of_runs_seen_in_full(
    users: dict[str, Any],
) -> None:
    """An operator who sees other people's runs as a guest cannot find them by their args
    or key, not even a prefix at a time; their own runs, and any run's id and job, yes."""
    operator = users["operator"]
    theirs = private_run(users["root"], secret="hunter2", key="payroll-march")
    mine = private_run(operator, secret="swordfish", key="my-own-key")
    client = client_of(operator)
    for word in ("hunter2", "hun", "payroll", "payroll-march"):
        assert str(theirs.pk) not in listed(client, q=word), word
    assert str(mine.pk) in listed(client, q="swordfish")
    assert str(mine.pk) in listed(client, q="my-own")
    assert str(theirs.pk) in listed(client, q=str(theirs.pk)[:8])
    both = listed(client, q="tests.private")
    assert str(theirs.pk) in both
    assert str(mine.pk) in both
    assert str(theirs.pk) not in listed(client, q="tests.private hunter2"), "every word"
    auditor = client_of(staff("full", "view_run"))
    assert str(theirs.pk) in listed(auditor, q="hunter2")
    assert str(theirs.pk) in listed(auditor, q="payroll-march")


def test_console_run_filters_read_only_what_a_guest_sees(users: dict[str, Any]) -> None:
    """Filters in the address on private fields are a 400 for a guest-view operator; the
    list's own filters, its date drill-down and the schedule page's link still work."""
    theirs = private_run(users["root"], key="payroll-march")
    client = client_of(users["operator"])
    for lookup, value in (
        ("args__icontains", "hunter2"),
        ("args__secret__startswith", "h"),
        ("idempotency_key__startswith", "1:pay"),
        ("result__isnull", "False"),
        ("error_message__icontains", "x"),
        ("state__data__icontains", "owner"),
        ("owner__password__startswith", "p"),
    ):
        assert client.get(RUNS, {lookup: value}).status_code == 400, lookup
    created = theirs.created_at
    for params in (
        {"status__exact": "queued"},
        {"job__exact": "tests.private"},
        {"queue__exact": "default"},
        {"owner__id__exact": str(users["root"].pk)},
        {"schedule__id__exact": "1"},
        {"created_at__year": str(created.year), "created_at__month": str(created.month)},
    ):
        listed(client, **params)
    assert str(theirs.pk) in listed(client, status__exact="queued")
    auditor = client_of(staff("full", "view_run"))
    assert str(theirs.pk) in listed(auditor, args__icontains="hunter2")


# -- the schedule list ----------------------------------------------------------------------

SCHEDULES = "/admin/django_weft/schedule/"


def test_console_schedule_list_filters_and_columns_only_what_a_guest_sees(
    users: dict[str, Any],
) -> None:
    """Staff who may change schedules but not view them in full (no view_schedule) cannot
    filter the list by another owner's args or last error (a 400), and see no last-error
    column; with view_schedule both work."""
    Schedule.objects.create(
        name="payroll",
        job="tests.private",
        args={"label": "nightly", "secret": "hunter2"},
        every=timedelta(hours=1),
        owner=users["root"],
        last_error_message="the secret hunter2 was refused",
    )
    changer = client_of(staff("changer", "change_schedule"))
    for lookup, value in (
        ("args__icontains", "hunter2"),
        ("args__secret__startswith", "h"),
        ("last_error_message__icontains", "hunter2"),
        ("catch_up__exact", "skip"),
    ):
        assert changer.get(SCHEDULES, {lookup: value}).status_code == 400, lookup
    page = changer.get(SCHEDULES, {"enabled__exact": "1"}).content.decode()
    assert "payroll" in page
    assert "column-last_error" not in page
    assert "hunter2" not in page

    viewer = client_of(staff("viewer", "view_schedule", "change_schedule"))
    response = viewer.get(SCHEDULES, {"args__icontains": "hunter2"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "payroll" in page
    assert "column-last_error" in page

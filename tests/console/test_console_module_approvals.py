"""The console's approvals of stored modules name the revision the approver saw, and its
module pages write one history entry per change.

The list's *approve* action carries the revision each row showed, the page's button the
one the page showed; a revision saved in between is refused with a message naming both,
and nothing is approved. The service layer writes each save's and delete's admin history
entry; Django's own (a second, unchecked one) are not written.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from django_weft import operations
from django_weft.models import AuditRecord, Module
from tests.sandbox.test_module_permissions import OLD, SECRET, edited, state_of, stored, user

pytestmark = pytest.mark.django_db

LIST = "admin:django_weft_module_changelist"


def signed_in(who: Any) -> Client:
    client = Client()
    client.force_login(who)
    return client


def messages_of(response: Any) -> list[str]:
    return [str(message) for message in response.context["messages"]]


@pytest.fixture
def alice() -> Any:
    """The module's owner, who approves (staff: the console is for staff)."""
    return user("alice", "view_module", "change_module")


@pytest.fixture
def manager() -> Any:
    return user("mia", "manage_module")


def approve_listed(client: Client, module: Module, shown: str | None) -> Any:
    data = {"action": "approve_action", "_selected_action": [str(module.pk)]}
    if shown is not None:
        data[f"weft_revision_{module.pk}"] = shown
    return client.post(reverse(LIST), data, follow=True)


def test_module_list_action_approves_only_the_revision_its_row_showed(
    alice: Any, manager: Any
) -> None:
    """The list shows revision 2 waiting, and its form carries that number; revision 3
    saved before the click is refused naming both, and nothing is approved; approving
    what the list shows then approves 3."""
    module = stored(alice)
    operations.save_module_for(manager, edited(module, source=SECRET))
    client = signed_in(alice)
    listing = client.get(reverse(LIST)).content.decode()
    assert f"<input type='hidden' name='weft_revision_{module.pk}' value='2'>" in listing

    operations.save_module_for(manager, edited(module, source=OLD.replace("old", "newer")))
    said = messages_of(approve_listed(client, module, "2"))
    assert said == [
        'm: revision 3 of "m" was saved after revision 2, the one you approve; nothing '
        "was approved: read revision 3, then approve it"
    ]
    assert state_of(module) == (3, 1, 3)
    assert not AuditRecord.objects.filter(action="module_approve").exists()

    said = messages_of(approve_listed(client, module, "3"))
    assert said == ["m: revision 3: runs execute it from now on."]
    assert state_of(module) == (3, 3, 3)


def test_module_list_action_without_the_shown_revision_approves_nothing(
    alice: Any, manager: Any
) -> None:
    """A post that does not say which revision was seen (a stale page, a script) is refused."""
    module = stored(alice)
    operations.save_module_for(manager, edited(module, source=SECRET))
    for shown in (None, "", "latest"):
        said = messages_of(approve_listed(signed_in(alice), module, shown))
        assert said == [
            "m: the list sent no revision to approve; nothing was approved. Reload the "
            "list, read what waits, and approve again."
        ]
    assert state_of(module) == (2, 1, 2)


def test_module_page_button_refuses_a_revision_saved_since_the_page_was_shown(
    alice: Any, manager: Any
) -> None:
    """The page's button approves the revision the page showed; once a newer one is
    saved, the button shown before is refused, naming both."""
    module = stored(alice)
    operations.save_module_for(manager, edited(module, source=SECRET))
    client = signed_in(alice)
    page = client.get(reverse("admin:django_weft_module_change", args=[module.pk]))
    button = reverse("admin:django_weft_module_approve", args=[module.pk, 2])
    assert button in page.content.decode()

    operations.save_module_for(manager, edited(module, source=OLD.replace("old", "newer")))
    said = messages_of(client.post(button, follow=True))
    assert said == [
        'm: revision 3 of "m" was saved after revision 2, the one you approve; nothing '
        "was approved: read revision 3, then approve it"
    ]
    assert state_of(module) == (3, 1, 3)


def test_module_approval_of_an_earlier_revision_stays_open_to_python(alice: Any) -> None:
    """Without ``latest``, the service layer approves any revision of the history (a
    roll back); with it, only the newest."""
    module = stored(alice)
    operations.save_module_for(alice, edited(module, source=OLD.replace("old", "two")))
    newer = 'revision 2 of "m" was saved after revision 1, the one you approve'
    with pytest.raises(ValidationError, match=newer):
        operations.approve_module_for(alice, module, 1, latest=True)
    assert operations.approve_module_for(alice, module, 1) is True
    assert state_of(module) == (2, 1, 2)


def module_form(name: str, source: str) -> dict[str, str]:
    return {
        "name": name,
        "source": source,
        "grants": [],
        "revisions-TOTAL_FORMS": "0",
        "revisions-INITIAL_FORMS": "0",
    }


def test_module_saves_in_the_admin_write_one_history_entry_each() -> None:
    """The add page's save and the change page's: one admin history entry each, the
    service layer's (which says through which entry point), none of Django's own."""
    owner = user("olga", "add_module", "view_module")
    client = signed_in(owner)
    added = client.post(reverse("admin:django_weft_module_add"), module_form("m", OLD))
    assert added.status_code == 302, added.content.decode()
    module = Module.objects.get(name="m")
    change = reverse("admin:django_weft_module_change", args=[module.pk])
    form = module_form("m", OLD.replace("old", "two"))
    form["revisions-TOTAL_FORMS"] = form["revisions-INITIAL_FORMS"] = "1"
    form["revisions-0-id"] = str(module.revisions.get().pk)
    form["revisions-0-module"] = str(module.pk)
    changed = client.post(change, form)
    assert changed.status_code == 302, changed.content.decode()
    history = LogEntry.objects.filter(object_id=str(module.pk)).order_by("pk")
    assert [entry.change_message for entry in history] == [
        "Saved revision 1 (through the admin).",
        "Saved revision 2 (through the admin).",
    ]


def test_module_delete_in_the_admin_is_on_record_once(alice: Any) -> None:
    """The delete page's delete: the service layer's record (with the module's id and
    name), one history entry, and in the audit list without a link to the page gone."""
    module = stored(alice)
    pk = module.pk
    client = signed_in(alice)
    response = client.post(reverse("admin:django_weft_module_delete", args=[pk]), {"post": "yes"})
    assert response.status_code == 302
    assert not Module.objects.filter(pk=pk).exists()
    record = AuditRecord.objects.get()
    assert (record.action, record.object_id, record.object_repr, record.via) == (
        "module_delete",
        str(pk),
        "m",
        "admin",
    )
    assert LogEntry.objects.filter(object_id=str(pk)).count() == 1
    auditor = user("auditor", "view_auditrecord")
    listing = signed_in(auditor).get(reverse("admin:django_weft_auditrecord_changelist"))
    text = listing.content.decode()
    assert "delete a module" in text
    assert f"module {pk}" in text
    assert reverse("admin:django_weft_module_change", args=[pk]) not in text

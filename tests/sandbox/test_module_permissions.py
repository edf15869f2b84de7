"""Who may change, grant, approve and call a stored module, and what a run of it executes.

The rules (docs/security.md, "Stored modules"): a module is its creator's; only its owner
or ``manage_module`` changes, approves or deletes it (``change_module`` alone does not);
a grant beyond the approved revision's needs ``grant_host_function``; a run or schedule
calls a module only if its owner owns it or holds ``use_module``, checked at the start
and again when the run calls it; runs execute the approved revision only. Each rule is
asserted through the service layer, and the admin's pages over it, on a real database;
the runs are real worker runs with real sandbox children.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Permission, User
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from django_weft import operations
from django_weft.engine.runs.starting import StartRequest
from django_weft.exceptions import Forbidden, InvalidArgs
from django_weft.jobs.registry import registry
from django_weft.models import Module, ModuleRevision, Run, RunStatus, Schedule
from django_weft.sandbox.modules import save_module
from django_weft.testing import DrivenClock, Rehearsal
from tests.sandbox_helpers import limits  # noqa: F401  (and registers the tests' host functions)

OLD = "def default():\n    return 'old'\n"
SECRET = "def default():\n    return host('tests.secret')\n"


def user(name: str, *permissions: str, staff: bool = True) -> User:
    """A user holding ``permissions`` (codenames of django_weft's)."""
    made: User = get_user_model().objects.create_user(name, is_staff=staff)
    made.user_permissions.set(
        Permission.objects.filter(content_type__app_label="django_weft", codename__in=permissions)
    )
    return get_user_model().objects.get(pk=made.pk)  # without a stale permission cache


def stored(
    owner: User | None, source: str = OLD, grants: list[str] | None = None, name: str = "m"
) -> Module:
    """The module ``name``, saved by the project's code for ``owner``: revision 1, approved."""
    return save_module(Module(name=name, source=source, grants=grants or [], owner=owner))


def state_of(module: Module) -> tuple[int, int | None, int]:
    """(latest revision, approved revision, revisions kept): what a refusal must not move."""
    module = Module.objects.select_related("approved").get(pk=module.pk)
    approved = module.approved.revision if module.approved else None
    return module.revision, approved, module.revisions.count()


def edited(module: Module, **fields: Any) -> Module:
    """The stored ``module`` read afresh with ``fields`` changed, as a form would hand it."""
    fresh = Module.objects.get(pk=module.pk)
    for name, value in fields.items():
        setattr(fresh, name, value)
    return fresh


# -- owners and who may change a module ----------------------------------------------------------


@pytest.mark.django_db
def test_module_created_is_its_creators_and_approved() -> None:
    """``add_module`` stores a module owned by its creator, its first revision approved."""
    alice = user("alice", "add_module")
    module = operations.save_module_for(alice, Module(name="m", source=OLD))
    module.refresh_from_db()
    assert module.owner == alice
    assert module.approved is not None
    assert (module.approved.revision, module.approved.approved_by) == (1, alice)


@pytest.mark.django_db
def test_module_create_needs_add_module() -> None:
    """Without ``add_module`` (or signed out) nothing is stored, and the refusal says why."""
    with pytest.raises(Forbidden, match=r"add stored modules \(needs django_weft.add_module\)"):
        operations.save_module_for(user("bob", "change_module"), Module(name="m", source=OLD))
    with pytest.raises(Forbidden, match="signed in"):
        operations.save_module_for(AnonymousUser(), Module(name="m", source=OLD))
    assert not Module.objects.exists()


@pytest.mark.django_db
def test_module_owner_edit_is_approved_at_once() -> None:
    """The owner's save is the next revision, and runs execute it from then on."""
    alice = user("alice")
    module = stored(alice)
    operations.save_module_for(alice, edited(module, source="def default():\n    return 2\n"))
    assert state_of(module) == (2, 2, 2)


@pytest.mark.django_db
def test_module_change_module_alone_cannot_change_someone_elses() -> None:
    """``change_module`` without ``manage_module`` is refused on another user's module:
    nothing is written, and the owner is never changed by an edit."""
    module = stored(user("alice"))
    bob = user("bob", "change_module", "add_module")
    with pytest.raises(Forbidden) as refused:
        operations.save_module_for(bob, edited(module, source=SECRET, owner=bob))
    assert str(refused.value) == (
        'you may not change stored module "m" (needs django_weft.manage_module, or to be its owner)'
    )
    assert state_of(module) == (1, 1, 1)
    assert Module.objects.get().source == OLD


@pytest.mark.django_db
def test_module_without_owner_is_changed_only_by_managers() -> None:
    """A module without an owner (as migrated rows are) is a module manager's only."""
    module = stored(None)
    with pytest.raises(Forbidden, match="manage_module"):
        operations.save_module_for(user("bob", "change_module"), edited(module, source=SECRET))
    operations.save_module_for(user("mia", "manage_module"), edited(module, source=SECRET))
    assert state_of(module) == (2, 1, 2)


@pytest.mark.django_db
def test_module_managers_edit_waits_for_approval() -> None:
    """A module manager's edit of someone else's module is kept as the latest revision,
    by its author, but runs go on executing the approved one; the owner stays the owner."""
    alice = user("alice")
    module = stored(alice)
    mia = user("mia", "manage_module")
    operations.save_module_for(mia, edited(module, source="def default():\n    return 2\n"))
    module = Module.objects.select_related("approved").get()
    assert (module.owner, module.revision) == (alice, 2)
    assert module.approved is not None
    assert (module.approved.revision, module.approved.source) == (1, OLD)
    latest = module.revisions.get(revision=2)
    assert (latest.author, latest.approved_at) == (mia, None)


@pytest.mark.django_db
def test_module_delete_needs_owner_or_manager() -> None:
    """Deleting frees the name for another module, so it is the owner's or a manager's,
    as the stored row says, whatever the caller's copy says."""
    alice = user("alice")
    module = stored(alice)
    bob = user("bob", "delete_module")
    with pytest.raises(Forbidden, match="delete stored module"):
        operations.delete_module_for(bob, edited(module, owner=bob))  # the row decides
    assert Module.objects.exists()
    operations.delete_module_for(alice, module)
    assert not Module.objects.exists()


# -- grants -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_module_grant_needs_grant_host_function() -> None:
    """Even the owner needs ``grant_host_function`` to grant; the refusal names the
    function, and nothing is written."""
    alice = user("alice", "add_module")
    with pytest.raises(Forbidden) as refused:
        operations.save_module_for(alice, Module(name="m", source=OLD, grants=["tests.secret"]))
    assert str(refused.value) == (
        'you may not grant "tests.secret" (needs django_weft.grant_host_function)'
    )
    assert not Module.objects.exists()
    module = stored(alice)
    with pytest.raises(Forbidden, match=re.escape('grant "tests.add", "tests.secret"')):
        operations.save_module_for(alice, edited(module, grants=["tests.add", "tests.secret"]))
    assert state_of(module) == (1, 1, 1)


@pytest.mark.django_db
def test_module_grant_with_the_permission() -> None:
    """With ``grant_host_function`` the owner's grant is saved and approved; keeping a
    grant the approved revision has needs no permission."""
    alice = user("alice", "add_module", "grant_host_function")
    module = operations.save_module_for(alice, Module(name="m", source=OLD, grants=["tests.add"]))
    assert state_of(module) == (1, 1, 1)
    carol = user("carol")
    kept = stored(carol, grants=["tests.add"], name="kept")
    operations.save_module_for(carol, edited(kept, source="def default():\n    return 3\n"))
    assert state_of(kept) == (2, 2, 2)


@pytest.mark.django_db
def test_module_unknown_grant_names_only_it() -> None:
    """An unknown grant is refused on ``grants`` naming it, and no registered function."""
    alice = user("alice", "add_module", "grant_host_function")
    with pytest.raises(ValidationError) as refused:
        operations.save_module_for(
            alice, Module(name="m", source=OLD, grants=["tests.add", "tests.nope"])
        )
    assert refused.value.message_dict == {"grants": ['No host function is named "tests.nope".']}
    assert not Module.objects.exists()


# -- approvals ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_module_owner_approves_an_edit() -> None:
    """The owner approves a manager's edit: runs execute it; the approval is recorded."""
    alice = user("alice")
    module = stored(alice)
    operations.save_module_for(user("mia", "manage_module"), edited(module, source=SECRET))
    assert operations.approve_module_for(alice, module, 2) is True
    assert state_of(module) == (2, 2, 2)
    revision = ModuleRevision.objects.get(revision=2)
    assert revision.approved_by == alice
    assert revision.approved_at is not None
    assert operations.approve_module_for(alice, module, 2) is False  # approved already


@pytest.mark.django_db
def test_module_approval_needs_owner_or_manager() -> None:
    """Nobody else approves, ``change_module`` or not; nothing changes."""
    module = stored(user("alice"))
    operations.save_module_for(user("mia", "manage_module"), edited(module, source=SECRET))
    with pytest.raises(Forbidden) as refused:
        operations.approve_module_for(user("bob", "change_module"), module, 2)
    assert str(refused.value) == (
        'you may not approve stored module "m" '
        "(needs django_weft.manage_module, or to be its owner)"
    )
    assert state_of(module) == (2, 1, 2)


@pytest.mark.django_db
def test_module_approving_a_grant_needs_grant_host_function() -> None:
    """Approving a revision that grants more than the approved one is granting: the owner
    without ``grant_host_function`` is refused, a manager with it approves."""
    alice = user("alice")
    module = stored(alice)
    granter = user("mia", "manage_module", "grant_host_function")
    operations.save_module_for(granter, edited(module, source=SECRET, grants=["tests.secret"]))
    with pytest.raises(Forbidden, match=re.escape('grant "tests.secret"')):
        operations.approve_module_for(alice, module, 2)
    assert state_of(module) == (2, 1, 2)
    assert operations.approve_module_for(granter, module, 2) is True
    assert state_of(module) == (2, 2, 2)


@pytest.mark.django_db
def test_module_approve_an_earlier_revision_and_an_unknown_one() -> None:
    """Approving an earlier revision rolls back what runs; a revision the module does not
    have is refused naming it."""
    alice = user("alice")
    module = stored(alice)
    operations.save_module_for(alice, edited(module, source=SECRET.replace("host", "str")))
    operations.approve_module_for(alice, module, 1)
    assert state_of(module) == (2, 1, 2)
    with pytest.raises(ValidationError) as refused:
        operations.approve_module_for(alice, module, 7)
    assert refused.value.message_dict == {"revision": ["m has no revision 7."]}


# -- who may call a module ----------------------------------------------------------------------


@pytest.mark.django_db
def test_module_start_needs_the_right_to_use_it() -> None:
    """``add_run`` alone does not call someone else's module; owning it or ``use_module``
    does, and so does the project's own code (a start without an owner)."""
    job = registry.get("weft.module")
    stored(user("alice", "add_run"))
    bob = user("bob", "add_run")
    with pytest.raises(InvalidArgs) as refused:
        operations.start_for(bob, StartRequest(job, {"module": "m"}))
    assert refused.value.errors == {
        "module": [
            'Only its owner and users with django_weft.use_module may call the stored module "m".'
        ]
    }
    assert not Run.objects.exists()
    alice = get_user_model().objects.get(username="alice")
    operations.start_for(alice, StartRequest(job, {"module": "m"}))
    operations.start_for(user("carol", "add_run", "use_module"), StartRequest(job, {"module": "m"}))
    operations.start(job, {"module": "m"})
    assert Run.objects.count() == 3


@pytest.mark.django_db
def test_module_schedule_needs_the_right_to_use_it() -> None:
    """A schedule is refused on save when its owner may not call the module."""
    stored(user("alice"))
    bob = user("bob", "add_run", "add_schedule")
    fields = {"name": "s", "job": "weft.module", "args": {"module": "m"}, "every": "1:00:00"}
    with pytest.raises(ValidationError) as refused:
        operations.create_schedule_for(bob, fields)
    assert "may call the stored module" in refused.value.message_dict["args"][0]
    assert not Schedule.objects.exists()


@pytest.mark.django_db
def test_module_inactive_owner_may_not_use_it() -> None:
    """A deactivated user's runs call no module, not even their own."""
    alice = user("alice", "add_run", "use_module")
    stored(alice)
    alice.is_active = False
    alice.save()
    with pytest.raises(InvalidArgs, match="may call the stored module"):
        operations.start(registry.get("weft.module"), {"module": "m"}, owner=alice)


@pytest.mark.django_db
def test_module_without_an_approved_revision_is_refused_at_start() -> None:
    """A module nobody approved (a raw write) is refused when a start names it."""
    Module.objects.create(name="m", source=OLD, revision=1)
    with pytest.raises(InvalidArgs) as refused:
        operations.start(registry.get("weft.module"), {"module": "m"})
    assert refused.value.errors == {
        "module": ['The stored module "m" has no approved revision yet.']
    }


@pytest.mark.django_db(transaction=True)
def test_module_use_is_checked_again_when_the_run_calls_it(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """An owner who lost ``use_module`` after the start gets a run that fails before any
    child starts, naming why."""
    stored(user("alice"))
    bob = user("bob", "add_run", "use_module")
    run, _ = operations.start_for(bob, StartRequest(registry.get("weft.module"), {"module": "m"}))
    bob.user_permissions.remove(Permission.objects.get(codename="use_module"))
    rehearsal.advance(timedelta(0))
    run.refresh_from_db()
    assert (run.status, run.error_type) == (RunStatus.FAILED, "ModuleNotAllowed")
    assert run.error_message == (
        'only its owner and users with django_weft.use_module may call the stored module "m";'
        " the run's owner is neither"
    )


@pytest.mark.django_db(transaction=True)
def test_module_schedule_whose_owner_lost_use_is_parked(
    clock: DrivenClock, rehearsal: Rehearsal, failures: list[dict[str, object]]
) -> None:
    """A fire of a schedule whose owner may no longer call its module starts nothing;
    the schedule says why."""
    stored(user("alice"))
    bob = user("bob", "add_run", "add_schedule", "use_module")
    fields = {
        "name": "report",
        "job": "weft.module",
        "args": {"module": "m"},
        "cron": "0 12 * * *",
        "timezone": "America/Toronto",
    }
    operations.create_schedule_for(bob, fields)
    bob.user_permissions.remove(Permission.objects.get(codename="use_module"))
    rehearsal.advance(timedelta(hours=7))
    assert not Run.objects.exists()
    assert "may call the stored module" in Schedule.objects.get().problem
    assert [failure["error_type"] for failure in failures] == ["Unschedulable"]


# -- the scenario: an edit never runs as someone else -----------------------------------


def fire(rehearsal: Rehearsal, hours: int) -> Run:
    """Drive the rehearsal ``hours`` on; the schedule's run that fired, ended."""
    rehearsal.advance(timedelta(hours=hours))
    run = Schedule.objects.get().last_run
    assert run is not None
    run.refresh_from_db()
    return run


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_module_edit_by_another_user_never_runs_unapproved(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """The High finding of issue 16: staff with only ``change_module`` saves new source
    with a grant; another user's schedule that calls the module fires. The save is
    refused, and the run executes the approved code. A manager's edit with a grant waits
    for approval: the next run still executes the old revision, and says so. Only once
    the edit is approved does a run return what the host function returned."""
    owner = user("olga", "add_module")
    operations.save_module_for(owner, Module(name="m", source=OLD))
    alice = user("alice", "add_run", "add_schedule", "use_module")
    fields = {
        "name": "report",
        "job": "weft.module",
        "args": {"module": "m"},
        "cron": "0 12 * * *",
        "timezone": "America/Toronto",
    }
    operations.create_schedule_for(alice, fields)
    module = Module.objects.get()

    staff = user("bob", "change_module", "view_module")
    with pytest.raises(Forbidden, match="manage_module"):
        operations.save_module_for(staff, edited(module, source=SECRET, grants=["tests.secret"]))
    first = fire(rehearsal, 7)  # 12:00 in Toronto
    assert (first.status, first.result, first.owner) == (RunStatus.DONE, "old", alice)

    manager = user("mia", "manage_module", "grant_host_function")
    operations.save_module_for(manager, edited(module, source=SECRET, grants=["tests.secret"]))
    second = fire(rehearsal, 24)
    assert (second.status, second.result) == (RunStatus.DONE, "old")
    assert second.state is not None
    assert (second.state.data["module"], second.state.data["revision"]) == ("m", 1)

    operations.approve_module_for(manager, module, 2)
    third = fire(rehearsal, 24)
    assert (third.status, third.result) == (RunStatus.DONE, "the host's secret")
    assert third.state is not None
    assert third.state.data["revision"] == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_module_run_has_only_the_approved_revisions_grants(
    clock: DrivenClock, rehearsal: Rehearsal
) -> None:
    """A grant added by an edit that waits for approval is not the run's: the approved
    source calling the host function is refused."""
    alice = user("alice", "add_run")
    module = stored(alice, source=SECRET)
    manager = user("mia", "manage_module", "grant_host_function")
    operations.save_module_for(manager, edited(module, grants=["tests.secret"]))
    run, _ = operations.start_for(alice, StartRequest(registry.get("weft.module"), {"module": "m"}))
    rehearsal.advance(timedelta(0))
    run.refresh_from_db()
    assert (run.status, run.error_type) == (RunStatus.FAILED, "HostCallRefused")
    assert "its grants: none" in run.error_message


# -- the admin ----------------------------------------------------------------------------------


def signed_in(who: User) -> Client:
    client = Client()
    client.force_login(who)
    return client


def change_form(
    module: Module, source: str, grants: list[str] | None = None
) -> dict[str, str | list[str]]:
    """The change page's POST: the fields (each grant a ticked box) and the history's
    (read-only) inline rows."""
    revisions = list(module.revisions.order_by("-revision"))
    data: dict[str, str | list[str]] = {
        "name": module.name,
        "source": source,
        "grants": grants or [],
        "revisions-TOTAL_FORMS": str(len(revisions)),
        "revisions-INITIAL_FORMS": str(len(revisions)),
        "revisions-MIN_NUM_FORMS": "0",
        "revisions-MAX_NUM_FORMS": "1000",
    }
    for index, revision in enumerate(revisions):
        data[f"revisions-{index}-id"] = str(revision.pk)
        data[f"revisions-{index}-module"] = str(module.pk)
    return data


@pytest.mark.django_db
def test_admin_module_change_only_staff_is_refused_on_the_form() -> None:
    """The admin's save goes through the service layer: change-only staff gets the form
    again with the refusal, and nothing is written or logged."""
    module = stored(user("alice"))
    staff = signed_in(user("bob", "change_module", "view_module"))
    page = staff.post(
        reverse("admin:django_weft_module_change", args=[module.pk]),
        change_form(module, SECRET, ["tests.secret"]),
    )
    assert page.status_code == 200
    assert "needs django_weft.manage_module, or to be its owner" in page.content.decode()
    assert state_of(module) == (1, 1, 1)
    assert Module.objects.get().grants == []


@pytest.mark.django_db
def test_admin_module_add_sets_the_owner_and_refuses_a_grant() -> None:
    """The add page stores the module as the signed-in user's; a grant without
    ``grant_host_function`` is refused on the form, naming the function."""
    client = signed_in(user("alice", "add_module", "view_module"))
    add = reverse("admin:django_weft_module_add")
    page = client.post(add, {"name": "m", "source": OLD, "grants": ["tests.secret"]})
    assert "grant &quot;tests.secret&quot; (needs django_weft.grant_host_function)" in (
        page.content.decode()
    )
    assert not Module.objects.exists()
    assert client.post(add, {"name": "m", "source": OLD, "grants": []}).status_code == 302
    assert Module.objects.get().owner == get_user_model().objects.get(username="alice")


@pytest.mark.django_db
def test_admin_module_approve_button() -> None:
    """A waiting revision shows on the page with an *approve* button for its owner; the
    button approves it. Someone who may not approve gets no button and a refusal."""
    alice = user("alice", "view_module")
    module = stored(alice)
    operations.save_module_for(user("mia", "manage_module"), edited(module, source=SECRET))
    change = reverse("admin:django_weft_module_change", args=[module.pk])
    approve = reverse("admin:django_weft_module_approve", args=[module.pk, 2])

    bob = signed_in(user("bob", "change_module", "view_module"))
    assert approve not in bob.get(change).content.decode()
    refused = bob.post(approve, follow=True).content.decode()
    assert "needs django_weft.manage_module, or to be its owner" in refused
    assert state_of(module) == (2, 1, 2)

    client = signed_in(alice)
    page = client.get(change).content.decode()
    assert "revision 1; revision 2 waits for approval" in page
    assert approve in page
    done = client.post(approve, follow=True).content.decode()
    assert "M: revision 2: runs execute it from now on." in done
    assert state_of(module) == (2, 2, 2)


@pytest.mark.django_db
def test_admin_module_approve_action() -> None:
    """The list's action approves each selected module's revision its row showed, or says
    why not."""
    alice = user("alice", "view_module", "change_module")
    module = stored(alice)
    operations.save_module_for(user("mia", "manage_module"), edited(module, source=SECRET))
    response = signed_in(alice).post(
        reverse("admin:django_weft_module_changelist"),
        {
            "action": "approve_action",
            "_selected_action": [str(module.pk)],
            f"weft_revision_{module.pk}": "2",
        },
        follow=True,
    )
    assert "M: revision 2: runs execute it from now on." in response.content.decode()
    assert state_of(module) == (2, 2, 2)


@pytest.mark.django_db
def test_admin_module_delete_by_someone_else_is_refused() -> None:
    """``delete_module`` alone does not delete another user's module; there is no bulk
    delete that would skip the check."""
    module = stored(user("alice"))
    bob = signed_in(user("bob", "delete_module", "view_module", "change_module"))
    delete = reverse("admin:django_weft_module_delete", args=[module.pk])
    page = bob.post(delete, {"post": "yes"}, follow=True).content.decode()
    assert "Not deleted" in page
    assert "needs django_weft.manage_module, or to be its owner" in page
    assert Module.objects.exists()
    listing = bob.get(reverse("admin:django_weft_module_changelist")).content.decode()
    assert "delete_selected" not in listing


# -- the migration ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_migration_gives_existing_modules_no_owner_and_approves_their_latest_revision() -> None:
    """Rows stored before owners existed have none, and what ran before runs on."""
    before, after = [("django_weft", "0007_overview")], [("django_weft", "0008_module_owners")]
    executor = MigrationExecutor(connection)
    newest = executor.loader.graph.leaf_nodes("django_weft")
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        kept = old.get_model("django_weft", "Module").objects.create(
            name="kept", source=OLD, revision=2
        )
        old.get_model("django_weft", "ModuleRevision").objects.create(
            module=kept, revision=2, source=OLD, grants=[]
        )
        old.get_model("django_weft", "Module").objects.create(name="raw", source=SECRET, revision=0)
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(after)
        modules = {module.name: module for module in Module.objects.select_related("approved")}
        assert {name: module.owner_id for name, module in modules.items()} == {
            "kept": None,
            "raw": None,
        }
        assert modules["kept"].approved is not None
        assert (modules["kept"].approved.revision, modules["kept"].approved.approved_by) == (
            2,
            None,
        )
        assert modules["raw"].approved is not None
        assert modules["raw"].approved.source == SECRET
    finally:  # the next test finds every table
        Module.objects.all().delete()
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(newest)

"""Who may do what, through every entry point: one matrix, asserted on the real endpoints.

For each entry point (the admin, the REST API, the live socket, the Python service layer),
each principal (signed out, a guest, the owner of the run, schedule and module, another
user who owns runs and schedules of their own, view-only staff, an operator, change-only
staff, a module manager, a superuser, a deactivated user) and each operation (see a run,
start, abort, run a schedule now, edit a schedule, edit a document, save and approve a
stored module, pause and resume a queue), the expected outcome is in ``RULES`` (narrowed
per entry point by ``NARROWER``) and each cell is a test that does it for real and looks
at what happened in the database. The API and the socket have no module or queue
endpoints: those cells are ``n/a``, and the test shows there is no such endpoint. The rules are in
one place (django_weft.operations); this is what makes sure no entry point has its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Permission
from django.db import transaction
from django.test import Client
from rest_framework.test import APIClient

from django_weft import access, operations
from django_weft.exceptions import Forbidden
from django_weft.live import projections
from django_weft.models import (
    AuditAction,
    AuditRecord,
    Document,
    Module,
    PausedQueue,
    Run,
    RunStatus,
    Schedule,
)
from django_weft.operations import open_document, start
from django_weft.sandbox.modules import save_module
from django_weft.sockets.consumers import RunsConsumer
from django_weft.timing import clocks
from tests.patience import EVENTUALLY

pytestmark = pytest.mark.django_db(transaction=True)

PRINCIPALS = (
    "anonymous",
    "guest",
    "owner",
    "other_owner",
    "viewer",
    "operator",
    "change_only",
    "module_manager",
    "superuser",
    "deactivated",
)
ENTRIES = ("admin", "api", "socket", "python")
OPERATIONS = (
    "see",
    "start",
    "abort",
    "run_now",
    "edit_schedule",
    "edit_document",
    "save_module",
    "approve_module",
    "pause_queue",
    "resume_queue",
)
#: Operations on objects the API and the socket have no endpoint for.
NO_ENDPOINT = ("save_module", "approve_module", "pause_queue", "resume_queue")

#: What each principal may do, wherever it asks: full/guest (a view), yes, or no.
RULES: dict[str, dict[str, str]] = {
    "see": {
        "anonymous": "no",
        "guest": "guest",
        "owner": "full",
        "other_owner": "guest",
        "viewer": "full",
        "operator": "full",
        "change_only": "guest",
        "module_manager": "guest",
        "superuser": "full",
        "deactivated": "no",
    },
    "start": {
        **dict.fromkeys(PRINCIPALS, "no"),
        "owner": "yes",
        "other_owner": "yes",
        "operator": "yes",
        "superuser": "yes",
    },
    "abort": {
        **dict.fromkeys(PRINCIPALS, "no"),
        "owner": "yes",
        "operator": "yes",
        "change_only": "yes",
        "superuser": "yes",
    },
    # Run now needs add_run besides the schedule's owner or change_schedule.
    "run_now": {
        **dict.fromkeys(PRINCIPALS, "no"),
        "owner": "yes",
        "operator": "yes",
        "superuser": "yes",
    },
    "edit_schedule": {
        **dict.fromkeys(PRINCIPALS, "no"),
        "owner": "yes",
        "operator": "yes",
        "change_only": "yes",
        "superuser": "yes",
    },
    # Documents change one revision at a time through code, never through an entry point.
    "edit_document": dict.fromkeys(PRINCIPALS, "no"),
    # A module is its owner's: its owner or manage_module (change_module alone is not enough).
    "save_module": {
        **dict.fromkeys(PRINCIPALS, "no"),
        "owner": "yes",
        "module_manager": "yes",
        "superuser": "yes",
    },
    "approve_module": {
        **dict.fromkeys(PRINCIPALS, "no"),
        "owner": "yes",
        "module_manager": "yes",
        "superuser": "yes",
    },
    # A pause stops everyone's runs: pause_queue only.
    "pause_queue": {**dict.fromkeys(PRINCIPALS, "no"), "superuser": "yes"},
    "resume_queue": {**dict.fromkeys(PRINCIPALS, "no"), "superuser": "yes"},
}

#: Where an entry point narrows the rules: the admin is for staff (the owner is not), and
#: starts runs only from schedules; the socket starts and aborts runs, nothing else; the
#: service layer has no document edit (documents are changed by code, see documents.py).
NARROWER = {
    **{("admin", operation, "owner"): "no" for operation in OPERATIONS},
    **{("admin", operation, "other_owner"): "no" for operation in OPERATIONS},
    ("admin", "see", "guest"): "no",
    ("admin", "see", "module_manager"): "no",
    **{("admin", "start", who): "no" for who in PRINCIPALS},
    **{
        (entry, op, who): "n/a"
        for entry in ("api", "socket")
        for op in NO_ENDPOINT
        for who in PRINCIPALS
    },
    # Signed out or deactivated, the socket is closed before any frame, n/a or not.
    **{("socket", op, who): "no" for op in NO_ENDPOINT for who in ("anonymous", "deactivated")},
    **{("socket", "run_now", who): "no" for who in PRINCIPALS},
    **{("socket", "edit_schedule", who): "no" for who in PRINCIPALS},
}


def expected(entry: str, operation: str, principal: str) -> str:
    return NARROWER.get((entry, operation, principal), RULES[operation][principal])


CELLS = [
    pytest.param(entry, operation, principal, id=f"{entry}-{operation}-{principal}")
    for entry in ENTRIES
    for operation in OPERATIONS
    for principal in PRINCIPALS
    if not (entry == "python" and operation == "edit_document")
]


@dataclass
class World:
    users: dict[str, Any]
    run: Run
    schedule: Schedule
    document: Document
    module: Module


SOURCE = "def default():\n    return 'old'\n"

#: Everything django-weft has a permission for, for the deactivated user.
EVERYTHING = (
    "view_run",
    "add_run",
    "change_run",
    "view_schedule",
    "add_schedule",
    "change_schedule",
    "delete_schedule",
    "view_document",
    "change_document",
    "view_module",
    "change_module",
    "manage_module",
    "pause_queue",
)


def make_user(name: str, *codenames: str, staff: bool = False, superuser: bool = False) -> Any:
    user = get_user_model().objects.create_user(
        name, password="pw", is_staff=staff or superuser, is_superuser=superuser
    )
    granted = Permission.objects.filter(
        content_type__app_label="django_weft", codename__in=codenames
    )
    assert len(granted) == len(codenames), codenames
    user.user_permissions.add(*granted)
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture
def world() -> World:
    """Every principal and one row of each kind, written in one transaction (each cell's
    test builds it anew: a third of the time it took as many commits)."""
    with transaction.atomic():
        return build_world()


def build_world() -> World:
    owner = make_user("owner", "add_run", "add_schedule")
    users = {
        "anonymous": AnonymousUser(),
        "guest": make_user("guest"),
        "owner": owner,
        "viewer": make_user("viewer", "view_run", "view_schedule", "view_document", staff=True),
        "operator": make_user(
            "operator",
            "view_run",
            "add_run",
            "change_run",
            "view_schedule",
            "add_schedule",
            "change_schedule",
            "delete_schedule",
            "view_document",
            "change_document",
            staff=True,
        ),
        "other_owner": make_user("other", "add_run", "add_schedule", "add_module"),
        "change_only": make_user(
            "changer", "change_run", "change_schedule", "change_module", staff=True
        ),
        "module_manager": make_user(
            "manager", "view_module", "change_module", "manage_module", staff=True
        ),
        "superuser": make_user("root", superuser=True),
        # Signed in (force_login, a socket's scope) while active, then deactivated.
        "deactivated": make_user("gone", *EVERYTHING, superuser=True),
    }
    run = start("tests.private", {"label": "mine", "secret": "s3cret"}, owner=owner)
    schedule = Schedule.objects.create(
        name="nightly", job="tests.noop", cron="0 3 * * *", timezone="UTC", owner=owner
    )
    other = users["other_owner"]
    start("tests.private", {"label": "theirs", "secret": "other"}, owner=other)
    Schedule.objects.create(
        name="theirs", job="tests.noop", cron="0 3 * * *", timezone="UTC", owner=other
    )
    save_module(Module(name="theirs", source=SOURCE, grants=[], owner=other))
    document = open_document("shell:entries", schema="shell.entries", initial=lambda: {"n": 0})
    module = save_module(Module(name="mine", source=SOURCE, grants=[], owner=owner))
    # Revision 2, by someone else: it waits for the owner's (or a manager's) approval.
    waiting = Module.objects.get(pk=module.pk)
    waiting.source = SOURCE.replace("old", "new")
    operations.save_module_for(users["module_manager"], waiting)
    module = Module.objects.get(pk=module.pk)
    PausedQueue.objects.create(queue="held", paused_at=clocks.now())
    return World(users, run, schedule, document, module)


def signed_in_then_deactivated(client: Client, user: Any) -> None:
    """``client`` signed in as ``user``; a deactivated user signed in while still active."""
    if user.username == "gone":
        client.force_login(user)
        get_user_model().objects.filter(pk=user.pk).update(is_active=False)
        user.is_active = False
    elif user.is_authenticated:
        client.force_login(user)


# -- what happened, read from the database -----------------------------------------------------


def aborted(world: World) -> bool:
    return Run.objects.get(pk=world.run.pk).status == RunStatus.ABORTED


def ran_now(world: World) -> bool:
    return Run.objects.filter(schedule=world.schedule).exists()


def edited(world: World) -> bool:
    stored = Schedule.objects.get(pk=world.schedule.pk)
    return stored.cron == "0 4 * * *" or not stored.enabled


def started(world: World) -> bool:
    return Run.objects.filter(job="tests.noop").exists()


def module_saved(world: World) -> bool:
    return Module.objects.get(pk=world.module.pk).revision > 2


def module_approved(world: World) -> bool:
    module = Module.objects.select_related("approved").get(pk=world.module.pk)
    return module.approved is not None and module.approved.revision == 2


def queue_paused(world: World) -> bool:
    return PausedQueue.objects.filter(queue="mail").exists()


def queue_resumed(world: World) -> bool:
    return not PausedQueue.objects.filter(queue="held").exists()


def document_edited(world: World) -> bool:
    return Document.objects.get(pk=world.document.pk).data != {"n": 0}


def view_of(data: dict[str, Any]) -> str:
    """Which view of the run ``data`` is: the owner's has its secret, the guest's does not."""
    return "full" if data.get("args", {}).get("secret") == "s3cret" else "guest"


# -- the entry points ------------------------------------------------------------------------


def through_api(world: World, operation: str, user: Any) -> str:
    client = APIClient()
    signed_in_then_deactivated(client, user)
    run, schedule = world.run, world.schedule
    if operation in NO_ENDPOINT:
        # No module or queue endpoint: whatever is asked, nothing answers but a 404.
        for address in ("/api/weft/modules/", "/api/weft/queues/"):
            assert client.post(address, {"name": "mail"}, format="json").status_code == 404
        return "n/a"
    if operation == "see":
        response = client.get(f"/api/weft/runs/{run.pk}/")
        return view_of(response.json()) if response.status_code == 200 else "no"
    if operation == "start":
        client.post("/api/weft/runs/", {"job": "tests.noop"}, format="json")
        return "yes" if started(world) else "no"
    if operation == "abort":
        client.post(f"/api/weft/runs/{run.pk}/abort/")
        return "yes" if aborted(world) else "no"
    if operation == "run_now":
        client.post(f"/api/weft/schedules/{schedule.pk}/run-now/")
        return "yes" if ran_now(world) else "no"
    if operation == "edit_schedule":
        client.patch(f"/api/weft/schedules/{schedule.pk}/", {"cron": "0 4 * * *"}, format="json")
        return "yes" if edited(world) else "no"
    response = client.patch(
        f"/api/weft/documents/{world.document.pk}/", {"data": {"n": 1}}, format="json"
    )
    assert response.status_code in (403, 404)
    return "yes" if document_edited(world) else "no"


def through_admin(world: World, operation: str, user: Any) -> str:
    client = Client()
    signed_in_then_deactivated(client, user)
    run, schedule = world.run, world.schedule
    runs, schedules = "/admin/django_weft/run/", "/admin/django_weft/schedule/"
    modules, overview = "/admin/django_weft/module/", "/admin/django_weft/overview/"
    if operation == "save_module":
        client.post(f"{modules}{world.module.pk}/change/", module_form(world.module))
        return "yes" if module_saved(world) else "no"
    if operation == "approve_module":
        client.post(f"{modules}{world.module.pk}/approve/2/")
        return "yes" if module_approved(world) else "no"
    if operation == "pause_queue":
        client.post(f"{overview}queues/pause/", {"queue": "mail"})
        return "yes" if queue_paused(world) else "no"
    if operation == "resume_queue":
        client.post(f"{overview}queues/resume/", {"queue": "held"})
        return "yes" if queue_resumed(world) else "no"
    if operation == "see":
        response = client.get(f"{runs}{run.pk}/change/")
        if response.status_code != 200:
            return "no"
        return "full" if b"s3cret" in response.content else "guest"
    if operation == "start":
        response = client.post(f"{runs}add/", {"job": "tests.noop"})
        return "yes" if started(world) else "no"
    if operation == "abort":
        client.post(runs, {"action": "abort_action", "_selected_action": [str(run.pk)]})
        return "yes" if aborted(world) else "no"
    if operation == "run_now":
        client.post(schedules, {"action": "run_now_action", "_selected_action": [schedule.pk]})
        return "yes" if ran_now(world) else "no"
    if operation == "edit_schedule":
        client.post(schedules, {"action": "disable_action", "_selected_action": [schedule.pk]})
        return "yes" if edited(world) else "no"
    document = f"/admin/django_weft/document/{world.document.pk}/change/"
    client.post(document, {"key": "shell:entries", "schema": "x", "version": 1, "data": '{"n": 1}'})
    return "yes" if document_edited(world) else "no"


def module_form(module: Module) -> dict[str, str | list[str]]:
    """The module's change page POST: new source, and the history's read-only inline rows."""
    revisions = list(module.revisions.order_by("-revision"))
    data: dict[str, str | list[str]] = {
        "name": module.name,
        "source": SOURCE.replace("old", "edited"),
        "grants": [],
        "revisions-TOTAL_FORMS": str(len(revisions)),
        "revisions-INITIAL_FORMS": str(len(revisions)),
        "revisions-MIN_NUM_FORMS": "0",
        "revisions-MAX_NUM_FORMS": "1000",
    }
    for index, revision in enumerate(revisions):
        data[f"revisions-{index}-id"] = str(revision.pk)
        data[f"revisions-{index}-module"] = str(module.pk)
    return data


def through_socket(world: World, operation: str, user: Any) -> str:
    return async_to_sync(_socket)(world, operation, user)


async def _socket(world: World, operation: str, user: Any) -> str:
    if user.is_authenticated and user.username == "gone":
        # As a browser would: the session of a sign-in made while active, read by
        # channels' own auth middleware after the account is deactivated.
        cookie = await signed_in_cookie(user)
        application = AuthMiddlewareStack(RunsConsumer.as_asgi())
        communicator = WebsocketCommunicator(
            application, "/ws/weft/runs/", headers=[(b"cookie", cookie)]
        )
    else:
        communicator = WebsocketCommunicator(RunsConsumer.as_asgi(), "/ws/weft/runs/")
        communicator.scope["user"] = user
    await communicator.connect(timeout=EVENTUALLY)
    first = await communicator.receive_output(timeout=EVENTUALLY)
    if first["type"] == "websocket.close":
        return "no"
    snapshot = json.loads(first["text"])
    try:
        if operation == "see":
            (mine,) = [r for r in snapshot["runs"] if r["id"] == str(world.run.pk)]
            return view_of(mine)
        frames = {
            "start": {"type": "start", "job": "tests.noop", "request_id": "r1"},
            "abort": {"type": "abort", "run": str(world.run.pk)},
            "run_now": {"type": "run_now", "schedule": world.schedule.pk},
            "edit_schedule": {"type": "edit_schedule", "schedule": world.schedule.pk},
            "edit_document": {"type": "change_document", "key": "shell:entries"},
            **{
                name: {"type": name, "module": world.module.pk, "queue": "mail"}
                for name in NO_ENDPOINT
            },
        }
        await communicator.send_json_to(frames[operation])
        reply = await communicator.receive_json_from(timeout=EVENTUALLY)
        while reply["type"] in ("run", "state", "live"):
            reply = await communicator.receive_json_from(timeout=EVENTUALLY)
        if operation in NO_ENDPOINT:
            # No such frame: it is answered with an error, and nothing is done.
            assert reply["type"] == "error"
            return "n/a"
        return "no" if reply["type"] == "error" else "yes"
    finally:
        await communicator.disconnect()


@database_sync_to_async
def signed_in_cookie(user: Any) -> bytes:
    client = Client()
    signed_in_then_deactivated(client, user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


def through_python(world: World, operation: str, user: Any) -> str:
    if user.is_authenticated and user.username == "gone":
        get_user_model().objects.filter(pk=user.pk).update(is_active=False)
        user = get_user_model().objects.get(pk=user.pk)
    try:
        if operation == "see":
            return projections.run_for(user, world.run) and view_of(
                projections.run_for(user, world.run)
            )
        if operation == "start":
            operations.start_for(user, operations.parse_start(user, {"job": "tests.noop"}))
        elif operation == "abort":
            operations.abort_for(user, world.run)
        elif operation == "run_now":
            operations.run_now_for(user, world.schedule)
        elif operation == "edit_schedule":
            operations.edit_schedule_for(user, world.schedule, {"cron": "0 4 * * *"})
        elif operation == "save_module":
            module = Module.objects.get(pk=world.module.pk)
            module.source = SOURCE.replace("old", "edited")
            operations.save_module_for(user, module)
        elif operation == "approve_module":
            operations.approve_module_for(user, world.module, 2)
        elif operation == "pause_queue":
            operations.pause_queue_for(user, "mail")
        elif operation == "resume_queue":
            operations.resume_queue_for(user, "held")
    except Forbidden:
        return "no"
    return "yes"


THROUGH = {
    "admin": through_admin,
    "api": through_api,
    "socket": through_socket,
    "python": through_python,
}


@pytest.mark.parametrize(("entry", "operation", "principal"), CELLS)
def test_permission_matrix(world: World, entry: str, operation: str, principal: str) -> None:
    """Each cell: the real entry point allows exactly what the rules say, nothing more."""
    if entry == "python" and operation == "see" and principal in ("anonymous", "deactivated"):
        # The service layer shows a signed-out caller the guest view; it is the socket
        # and the API that keep signed-out visitors out (WEFT_LIVE_ALLOW_ANONYMOUS).
        assert through_python(world, operation, world.users[principal]) == "guest"
        return
    outcome = THROUGH[entry](world, operation, world.users[principal])
    assert outcome == expected(entry, operation, principal)
    if outcome == "no":
        assert not (aborted(world))
        assert not (ran_now(world))
        assert not (started(world))
        assert not (document_edited(world))
        assert not (module_saved(world))
        assert not (module_approved(world))
        assert not (queue_paused(world))
        assert not (queue_resumed(world))
        if operation != "edit_schedule" or entry != "admin":
            assert Schedule.objects.get(pk=world.schedule.pk).cron == "0 3 * * *"


def test_a_changed_job_makes_the_editor_the_owner(world: World) -> None:
    """Nobody runs a job as someone else: changing another's job or args takes it over."""
    operator = world.users["operator"]
    operations.edit_schedule_for(operator, world.schedule, {"args": {}, "job": "tests.due"})
    assert Schedule.objects.get(pk=world.schedule.pk).owner_id == operator.pk
    operations.edit_schedule_for(world.users["operator"], world.schedule, {"cron": "0 5 * * *"})
    assert Schedule.objects.get(pk=world.schedule.pk).owner_id == operator.pk


def test_an_operators_plan_edit_keeps_the_owner(world: World) -> None:
    """Changing when a schedule fires does not change who it runs as."""
    operations.edit_schedule_for(world.users["operator"], world.schedule, {"cron": "0 5 * * *"})
    assert Schedule.objects.get(pk=world.schedule.pk).owner_id == world.users["owner"].pk


def test_creating_a_schedule_needs_the_right_to_start_runs(world: World) -> None:
    """add_schedule alone is not enough: a schedule starts runs."""
    maker = make_user("maker", "add_schedule")
    with pytest.raises(Forbidden, match=r"needs django_weft\.add_run"):
        operations.create_schedule_for(
            maker, {"name": "sneaky", "job": "tests.noop", "every": timedelta(hours=1)}
        )
    assert not Schedule.objects.filter(name="sneaky").exists()


def test_retry_needs_the_full_view_and_the_right_to_start(world: World) -> None:
    """A retry reuses the args: a guest may not retry, the owner may, once it finished."""
    run = world.run
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)
    run.refresh_from_db()
    with pytest.raises(Forbidden):
        operations.retry_for(world.users["guest"], run)
    again = operations.retry_for(world.users["owner"], run)
    assert (again.job, again.args, again.owner_id) == (run.job, run.args, run.owner_id)


def test_pausing_a_queue_needs_its_permission(world: World) -> None:
    """A queue pause stops everyone's runs: only pause_queue may do it."""
    with pytest.raises(Forbidden, match=r"django_weft\.pause_queue"):
        operations.pause_queue_for(world.users["operator"], "default")
    boss = make_user("boss", "pause_queue")
    assert operations.pause_queue_for(boss, "default") is True
    assert operations.pause_queue_for(boss, "default") is False
    assert operations.resume_queue_for(boss, "default") is True


#: Each rule of :mod:`django_weft.access` that work on many rows asks, and its queryset twin.
NARROWINGS = [
    pytest.param(access.sees_run_in_full, access.runs_seen_in_full, id="see-in-full"),
    pytest.param(access.may_abort_run, access.abortable_runs, id="abort"),
    pytest.param(access.may_delete_run, access.deletable_runs, id="delete"),
]


@pytest.mark.parametrize(("predicate", "narrowing"), NARROWINGS)
def test_each_narrowing_keeps_exactly_the_runs_its_rule_allows(
    world: World, predicate: Any, narrowing: Any
) -> None:
    """For every principal, the queryset a bulk action by filter starts from holds exactly
    the runs the single action's rule allows: the owner's, another user's, one without
    owner, and one of a deactivated user (who owns nothing any more)."""
    gone = world.users["deactivated"]
    get_user_model().objects.filter(pk=gone.pk).update(is_active=False)
    start("tests.noop")  # no owner: the project's own
    start("tests.noop", owner=gone)
    users = {**world.users, "deactivated": get_user_model().objects.get(pk=gone.pk)}
    runs = list(Run.objects.select_related("owner"))
    assert len(runs) == 4
    for principal, user in users.items():
        allowed = {run.pk for run in runs if predicate(user, run)}
        narrowed = set(narrowing(user, Run.objects.all()).values_list("pk", flat=True))
        assert narrowed == allowed, principal


def orphan_of(name: str, job: str = "tests.noop", args: dict[str, Any] | None = None) -> Schedule:
    """A schedule whose owner's user was deleted (``owner_removed``)."""
    gone = make_user(f"{name}-owner", "add_run")
    schedule = Schedule.objects.create(
        name=name, job=job, args=args or {}, cron="0 3 * * *", timezone="UTC", owner=gone
    )
    gone.delete()
    return Schedule.objects.get(pk=schedule.pk)


def test_enabling_a_schedule_whose_owner_was_removed_makes_the_enabler_its_owner(
    world: World,
) -> None:
    """Python's set_enabled_for and edit_schedule_for take it over as the acting user,
    never as no one (the deployment's own), each on record as a take-over."""
    operator = world.users["operator"]
    switched, edited = orphan_of("switched"), orphan_of("edited")
    assert operations.set_enabled_for(operator, [switched], enabled=True) == 1
    operations.edit_schedule_for(operator, edited, {"enabled": True})
    for schedule in (switched, edited):
        taken = Schedule.objects.get(pk=schedule.pk)
        assert (taken.owner_id, taken.owner_removed, taken.enabled) == (operator.pk, False, True)
    taken_over = AuditRecord.objects.filter(action=AuditAction.SCHEDULE_TAKE_OVER)
    assert sorted(taken_over.values_list("object_repr", flat=True)) == ["edited", "switched"]


def test_taking_over_a_schedule_needs_what_its_start_needs(world: World) -> None:
    """Without add_run, or without the use of the stored module its args call, the
    enabler may not become its owner: refused naming what is needed, and a batch with
    one such schedule writes nothing (all or none)."""
    changer = world.users["change_only"]  # change_schedule, no add_run
    plain = orphan_of("plain")
    with pytest.raises(
        Forbidden, match=r"whoever enables it becomes its owner \(needs django_weft\.add_run\)"
    ):
        operations.set_enabled_for(changer, [plain], enabled=True)
    with pytest.raises(Forbidden, match=r"needs django_weft\.add_run"):
        operations.edit_schedule_for(changer, plain, {"enabled": True})

    operator = world.users["operator"]  # add_run, change_schedule, no use_module
    calls = orphan_of("calls", "weft.module", {"module": "theirs"})
    off = Schedule.objects.create(
        name="off", job="tests.noop", every=timedelta(hours=1), enabled=False
    )
    with pytest.raises(
        Forbidden, match=r'django_weft\.use_module may call the stored module "theirs"'
    ):
        operations.set_enabled_for(operator, [off, calls, plain], enabled=True)
    assert not Schedule.objects.get(pk=off.pk).enabled
    for schedule in (plain, calls):
        kept = Schedule.objects.get(pk=schedule.pk)
        assert (kept.owner_id, kept.owner_removed) == (None, True)
    assert not AuditRecord.objects.filter(
        action__in=[AuditAction.SCHEDULE_ENABLE, AuditAction.SCHEDULE_TAKE_OVER]
    ).exists()

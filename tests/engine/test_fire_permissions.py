"""Tests for the permission check at every fire: a schedule starts its runs as its owner
only while that owner may start runs (active, holding ``django_weft.add_run``).

The scheduler (:mod:`django_weft.engine.schedules.scheduler`) asks :mod:`django_weft.access` for
each batch of due rows. A row whose owner may not is parked: no run, the slot counted
missed, the reason in ``problem``, ``schedule_failed`` once; its next slot asks again. A
row whose owner's user was deleted is parked until it is taken over. The clock starts at
2026-03-07 11:00 UTC; an hourly row (``every``) first fires at 12:00.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import BaseBackend, ModelBackend
from django.contrib.auth.models import AbstractBaseUser, Group, Permission
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from django_weft import access, operations
from django_weft.engine.outcomes.finishing import finish
from django_weft.engine.schedules.scheduler import Scheduler
from django_weft.engine.worker.loop import Worker
from django_weft.exceptions import StartRefused
from django_weft.live.changes import Changes
from django_weft.models import Overlap, Run, RunStatus, Schedule
from django_weft.testing import DrivenClock, Rehearsal

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
START = datetime(2026, 3, 7, 11, 0, tzinfo=UTC)


def utc(hour: int, minute: int = 0, day: int = 7) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


def user(name: str, *codenames: str, **fields: Any) -> AbstractBaseUser:
    """A user holding the named django_weft permissions (``add_run`` by default)."""
    made = get_user_model().objects.create_user(name, password="pw", **fields)
    for codename in codenames or ("add_run",):
        made.user_permissions.add(Permission.objects.get(codename=codename))
    return made


def hourly(owner: AbstractBaseUser | None, name: str = "hourly", **fields: Any) -> Schedule:
    fields.setdefault("job", "tests.noop")
    return Schedule.objects.create(name=name, every=HOUR, owner=owner, **fields)


def stored(schedule: Schedule) -> Schedule:
    return Schedule.objects.get(pk=schedule.pk)


def runs_of(schedule: Schedule) -> list[tuple[datetime | None, Any]]:
    """(due, owner id) of the schedule's runs, oldest first."""
    return list(
        Run.objects.filter(schedule=schedule).order_by("due").values_list("due", "owner_id")
    )


def deactivate(someone: AbstractBaseUser) -> None:
    get_user_model().objects.filter(pk=someone.pk).update(is_active=False)


def reactivate(someone: AbstractBaseUser) -> None:
    get_user_model().objects.filter(pk=someone.pk).update(is_active=True)


# -- the owner's state at each fire ----------------------------------------------------------


def test_fire_of_inactive_owner_is_skipped_parked_reported_once_and_resumes(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """Deactivated after the 12:00 run: 13:00 to 15:00 start nothing, are counted missed,
    the row says why and the signal is heard once; reactivated, 16:00 runs as her."""
    alice = user("alice")
    row = hourly(alice)
    rehearsal.advance(HOUR)
    assert runs_of(row) == [(utc(12), alice.pk)]

    deactivate(alice)
    rehearsal.advance(3 * HOUR)
    parked = stored(row)
    assert runs_of(row) == [(utc(12), alice.pk)]
    assert parked.missed == 3
    assert parked.problem == "owner alice is inactive"
    assert parked.next_due == utc(16)
    assert [(f["schedule"].pk, f["run"], f["error_type"], f["message"]) for f in failures] == [
        (row.pk, None, "OwnerMayNotStart", "owner alice is inactive")
    ]

    reactivate(alice)
    rehearsal.advance(HOUR)
    assert runs_of(row) == [(utc(12), alice.pk), (utc(16), alice.pk)]
    assert stored(row).problem == ""
    assert stored(row).missed == 3
    assert len(failures) == 1


def test_fire_of_owner_who_lost_add_run_is_parked_until_a_group_grants_it(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """The permission is read again at each fire, from the user's own permissions and
    from their groups."""
    alice = user("alice")
    row = hourly(alice)
    alice.user_permissions.clear()
    rehearsal.advance(2 * HOUR)
    assert runs_of(row) == []
    assert stored(row).problem == "owner alice lacks django_weft.add_run"
    assert stored(row).missed == 2
    assert len(failures) == 1

    starters = Group.objects.create(name="starters")
    starters.permissions.add(Permission.objects.get(codename="add_run"))
    alice.groups.add(starters)
    rehearsal.advance(HOUR)
    assert runs_of(row) == [(utc(14), alice.pk)]
    assert stored(row).problem == ""


def test_reason_that_changes_is_reported_again(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """Inactive, then active but without add_run: two reasons, two signals."""
    alice = user("alice")
    row = hourly(alice)
    deactivate(alice)
    rehearsal.advance(2 * HOUR)
    alice.user_permissions.clear()
    reactivate(alice)
    rehearsal.advance(2 * HOUR)
    assert runs_of(row) == []
    assert [f["message"] for f in failures] == [
        "owner alice is inactive",
        "owner alice lacks django_weft.add_run",
    ]


def test_active_superuser_owner_fires_and_inactive_one_does_not(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal
) -> None:
    """A superuser needs no permission row; deactivated, it starts nothing either."""
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    row = hourly(root)
    rehearsal.advance(HOUR)
    assert runs_of(row) == [(utc(12), root.pk)]

    deactivate(root)
    rehearsal.advance(HOUR)
    assert runs_of(row) == [(utc(12), root.pk)]
    assert stored(row).problem == "owner root is inactive"


def test_schedule_without_owner_fires_as_no_one(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal
) -> None:
    """A row made in code, a fixture or the shell has no owner and fires as before."""
    row = hourly(None)
    rehearsal.advance(2 * HOUR)
    assert runs_of(row) == [(utc(12), None), (utc(13), None)]
    assert stored(row).problem == ""


def test_parked_rows_of_a_batch_leave_the_others_firing(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal
) -> None:
    """In one batch, rows started one by one (a job with a concurrency limit) and in bulk
    (no limit): only the rows whose owners may start runs fire, each as its owner."""
    alice, bob, carol = user("alice"), user("bob"), user("carol")
    deactivate(bob)
    carol.user_permissions.clear()
    rows = {
        (who.get_username(), kind): hourly(who, f"{who.get_username()}-{kind}", **fields)
        for who in (alice, bob, carol)
        for kind, fields in (
            ("bulk", {}),
            ("one", {"job": "tests.one_per_owner", "args": {"label": "x"}}),
        )
    }
    rehearsal.advance(HOUR)
    fired = {key for key, row in rows.items() if runs_of(row)}
    assert fired == {("alice", "bulk"), ("alice", "one")}
    assert runs_of(rows["alice", "one"]) == [(utc(12), alice.pk)]
    assert {key: stored(row).problem for key, row in rows.items() if key[0] != "alice"} == {
        ("bob", "bulk"): "owner bob is inactive",
        ("bob", "one"): "owner bob is inactive",
        ("carol", "bulk"): "owner carol lacks django_weft.add_run",
        ("carol", "one"): "owner carol lacks django_weft.add_run",
    }


def test_one_off_of_parked_owner_is_looked_at_every_minute_and_fires_with_its_due(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """A one-off has no next slot: it waits, uncounted, and fires with its own due once
    its owner may start runs again."""
    alice = user("alice")
    deactivate(alice)
    row = Schedule.objects.create(name="once", job="tests.noop", at=utc(12), owner=alice)
    rehearsal.advance(HOUR + 10 * MINUTE)
    parked = stored(row)
    assert runs_of(row) == []
    assert parked.problem == "owner alice is inactive"
    assert parked.missed == 0
    assert parked.next_due is not None
    assert parked.next_due <= utc(12, 11)
    assert len(failures) == 1

    reactivate(alice)
    rehearsal.advance(2 * MINUTE)
    assert runs_of(row) == [(utc(12), alice.pk)]
    assert stored(row).problem == ""


@pytest.mark.django_db
def test_buffered_fire_of_owner_deactivated_while_it_waits_is_dropped() -> None:
    """The fire ``buffer_one`` holds back starts as the owner when the running run ends:
    it is dropped and counted missed if the owner may no longer start runs."""
    alice = user("alice")
    row = hourly(alice, overlap=Overlap.BUFFER_ONE)
    scheduler = Scheduler()
    scheduler.tick(START, Changes())
    scheduler.tick(utc(12), Changes())
    scheduler.tick(utc(13), Changes())
    assert stored(row).buffered_due == utc(13)

    deactivate(alice)
    first = Run.objects.get(schedule=row)
    finish(first.pk, RunStatus.DONE, now=utc(13, 30), changes=Changes())
    assert runs_of(row) == [(utc(12), alice.pk)]
    assert stored(row).buffered_due is None
    assert stored(row).missed == 1


# -- run now ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_run_now_of_parked_owner_is_refused_and_starts_nothing(rehearsal: Rehearsal) -> None:
    """*Run now* starts the run as the schedule's owner: refused while that owner may not
    start runs, whoever presses it."""
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    alice = user("alice")
    row = hourly(alice)
    deactivate(alice)
    with pytest.raises(StartRefused, match="schedule hourly does not start runs: owner alice"):
        operations.run_now_for(root, stored(row))
    assert Run.objects.count() == 0

    reactivate(alice)
    run = operations.run_now_for(root, stored(row))
    assert run.owner_id == alice.pk


# -- an owner whose user is deleted ----------------------------------------------------------


def test_deleting_the_owner_parks_the_schedule_and_its_fires(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal, failures: list[dict[str, Any]]
) -> None:
    """The row stays, without owner and marked ``owner_removed``; its fires start nothing
    (not even as no one), are counted, and are reported once."""
    alice = user("alice")
    row = hourly(alice)
    rehearsal.advance(HOUR)
    get_user_model().objects.filter(pk=alice.pk).delete()

    orphan = stored(row)
    assert orphan.owner_id is None
    assert orphan.owner_removed is True
    assert runs_of(row) == [(utc(12), None)]  # the past run stays, its owner gone too

    rehearsal.advance(3 * HOUR)
    orphan = stored(row)
    assert runs_of(row) == [(utc(12), None)]
    assert orphan.problem == access.OWNER_REMOVED == "owner was removed"
    assert orphan.missed == 3
    assert [(f["error_type"], f["message"]) for f in failures] == [
        ("OwnerMayNotStart", "owner was removed")
    ]


def test_schedule_of_removed_owner_enabled_again_fires_as_the_enabler(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal
) -> None:
    """*Enable* takes it over as the enabler's (never as no one): armed from now, fired
    as the enabler."""
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    alice = user("alice")
    row = hourly(alice)
    alice.delete()
    rehearsal.advance(HOUR)
    assert stored(row).problem == "owner was removed"

    assert operations.set_enabled_for(root, [stored(row)], enabled=True) == 1
    taken = stored(row)
    assert (taken.owner_removed, taken.owner_id) == (False, root.pk)
    assert taken.armed is False
    rehearsal.advance(HOUR + MINUTE)  # armed at 12:00, its grid from there
    assert runs_of(row) == [(utc(13), root.pk)]
    assert stored(row).problem == ""


def test_schedule_of_removed_owner_taken_over_by_an_edit_of_what_it_runs(
    clock: DrivenClock, worker: Worker, rehearsal: Rehearsal
) -> None:
    """An edit of its job or args makes the editor its owner, as for anyone's schedule:
    it fires again, as the editor."""
    alice = user("alice")
    bob = user("bob", "add_run", "change_schedule")
    row = hourly(alice, job="tests.one_per_owner", args={"label": "a"})
    alice.delete()

    operations.edit_schedule_for(bob, stored(row), {"args": {"label": "b"}})
    taken = stored(row)
    assert (taken.owner_id, taken.owner_removed) == (bob.pk, False)
    rehearsal.advance(HOUR)
    assert runs_of(row) == [(utc(12), bob.pk)]


@pytest.mark.django_db
def test_an_edit_that_leaves_the_owner_keeps_the_removed_mark() -> None:
    """A save that gives no owner leaves the row parked: only an owner, or *enable*,
    takes it over."""
    alice = user("alice")
    row = hourly(alice)
    alice.delete()
    orphan = stored(row)
    orphan.every = 2 * HOUR
    orphan.save()
    assert stored(row).owner_removed is True


# -- the check's cost and the auth backends ----------------------------------------------------


def permission_queries(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "auth_permission" in q["sql"]]


@pytest.mark.django_db
@pytest.mark.parametrize("owners", [2, 30])
def test_a_batch_asks_its_owners_permissions_in_one_query(owners: int) -> None:
    """Whatever the number of owners due at once, one query reads their permissions, and
    the fire makes as many queries for 30 owners as for 2 (one of them the fair shares,
    which a process reads once a second)."""
    people = [user(f"user{n}") for n in range(owners)]
    for person in people:
        hourly(person, f"row-of-{person.get_username()}")
    scheduler = Scheduler()
    scheduler.tick(START, Changes())
    with CaptureQueriesContext(connection) as captured:
        assert scheduler.fire_due(utc(12), Changes())
    assert Run.objects.count() == owners
    assert len(permission_queries(captured)) == 1
    assert len(captured.captured_queries) <= 9


class RefusesMallory(ModelBackend):
    """Django's permissions, except that ``mallory`` may start nothing."""

    def has_perm(self, user_obj: Any, perm: str, obj: Any = None) -> bool:
        return user_obj.get_username() != "mallory" and super().has_perm(user_obj, perm, obj)


class SignsInByEmail(ModelBackend):
    """Authenticates another way; its permissions are ModelBackend's."""

    def authenticate(self, request: Any, username: str | None = None, **kwargs: Any) -> None:
        return None


class OperatorsStart(BaseBackend):
    """Grants ``add_run`` to users named ``ops-...``, with no permission rows."""

    def has_perm(self, user_obj: Any, perm: str, obj: Any = None) -> bool:
        return perm == access.ADD_RUN and user_obj.get_username().startswith("ops-")


HERE = "tests.engine.test_fire_permissions"


@pytest.mark.django_db
@override_settings(AUTHENTICATION_BACKENDS=[f"{HERE}.RefusesMallory"])
def test_a_backend_that_refuses_is_asked_for_each_owner() -> None:
    """A backend that decides otherwise than ModelBackend is honoured: its ``has_perm``
    is asked, once per owner, though mallory holds the permission row."""
    alice, mallory = user("alice"), user("mallory")
    alice_row, mallory_row = hourly(alice, "a"), hourly(mallory, "m")
    assert access.owners_who_may_start([alice, mallory]) == {alice.pk}
    scheduler = Scheduler()
    scheduler.tick(START, Changes())
    scheduler.tick(utc(12), Changes())
    assert runs_of(alice_row) == [(utc(12), alice.pk)]
    assert runs_of(mallory_row) == []
    assert stored(mallory_row).problem == "owner mallory lacks django_weft.add_run"


@pytest.mark.django_db
@override_settings(
    AUTHENTICATION_BACKENDS=[
        "django.contrib.auth.backends.ModelBackend",
        f"{HERE}.OperatorsStart",
    ]
)
def test_a_backend_that_grants_is_honoured() -> None:
    """A backend granting ``add_run`` without permission rows lets its users' rows fire."""
    operator, guest = user("ops-eve"), user("guest")
    operator.user_permissions.clear()
    guest.user_permissions.clear()
    assert access.owners_who_may_start([operator, guest]) == {operator.pk}


@pytest.mark.django_db
@override_settings(AUTHENTICATION_BACKENDS=[f"{HERE}.SignsInByEmail"])
def test_a_model_backend_that_only_authenticates_otherwise_keeps_the_single_query() -> None:
    """A ModelBackend subclass that changes only how users sign in decides permissions as
    ModelBackend does: many owners, one query."""
    people = [user(f"user{n}") for n in range(5)]
    people[0].user_permissions.clear()
    with CaptureQueriesContext(connection) as captured:
        allowed = access.owners_who_may_start(people)
    assert allowed == {person.pk for person in people[1:]}
    assert len(captured.captured_queries) == 1


@pytest.mark.django_db
def test_inactive_owners_are_refused_without_asking() -> None:
    """An inactive owner may not start runs whatever a backend says; no query is made
    when no owner is active."""
    alice = user("alice", is_active=False)
    with CaptureQueriesContext(connection) as captured:
        assert access.owners_who_may_start([alice]) == set()
    assert captured.captured_queries == []

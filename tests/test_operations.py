"""The start and finish transactions of a run, and what happens between them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.utils import timezone

from django_weft import operations
from django_weft.engine.outcomes.finishing import finish
from django_weft.engine.worker.loop import Worker
from django_weft.exceptions import (
    ConcurrencyLimitReached,
    Forbidden,
    IdempotencyKeyReused,
    InvalidArgs,
    UnknownJob,
)
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.live.projections import phase
from django_weft.models import Document, LastStatus, Run, RunStatus, Schedule
from django_weft.operations import (
    abort,
    change_document,
    edit_schedule_for,
    open_document,
    parse_start,
    start,
)
from example_project.shell.jobs import shell
from tests.processes import wait_for
from tests.threads import concurrently

pytestmark = pytest.mark.django_db(transaction=True)


def execute_all() -> None:
    """Run every queued run to its end in this thread."""
    Worker(executor="django_weft.engine.worker.executors.InlineExecutor").run(once=True)


def test_start_invalid_args_names_the_field_and_writes_nothing() -> None:
    """Args that fail the serializer raise InvalidArgs naming each field; no row is written."""
    with pytest.raises(InvalidArgs) as error:
        start(shell, {"command": "", "lines": -1, "extra": True})
    assert set(error.value.errors) == {"command", "lines", "extra"}
    assert "shell.run" in str(error.value)
    assert not Run.objects.exists()
    assert not Document.objects.exists()


def test_start_returns_the_run_at_once_with_its_state_document() -> None:
    """A start commits a queued run and its state document with the initial value."""
    run = start(shell, {"command": "ls", "lines": 1})
    stored = Run.objects.select_related("state").get(pk=run.pk)
    assert stored.status == RunStatus.QUEUED
    assert stored.args == {"command": "ls", "lines": 1}
    assert stored.state is not None
    assert (stored.state.key, stored.state.schema, stored.state.data) == (
        f"run:{run.pk}",
        "shell.state",
        {"output": ""},
    )


def test_start_stores_the_run_it_returns_and_the_returned_run_saves_as_stored() -> None:
    """The start's hand-written INSERT stores every field as ``save()`` would, and the run
    it returns is a stored row: a later ``save()`` updates it instead of inserting again."""
    owner = get_user_model().objects.create_user("starter")
    run = start("tests.sleep", {"seconds": 2}, key="k-1", owner=owner, priority=9)
    stored = Run.objects.get(pk=run.pk)
    fields = [field.attname for field in Run._meta.concrete_fields]
    assert {name: getattr(stored, name) for name in fields} == {
        name: getattr(run, name) for name in fields
    }
    assert (stored.args, stored.owner_id, stored.priority) == ({"seconds": 2.0}, owner.pk, 9)
    assert stored.idempotency_key == f"{owner.pk}:k-1"
    assert stored.status == RunStatus.QUEUED
    run.priority = 3
    run.save()
    assert Run.objects.filter(pk=run.pk).values_list("priority", flat=True).get() == 3
    assert Run.objects.count() == 1


def test_start_same_key_returns_the_existing_run() -> None:
    """An idempotency key returns the run it first made, also once it has finished."""
    first = start(registry.get("tests.noop"), key="k")
    execute_all()
    again = start(registry.get("tests.noop"), key="k")
    assert again.pk == first.pk
    assert Run.objects.count() == 1


def test_start_same_key_other_args_is_refused() -> None:
    """A key sent again with different args is refused instead of returning the wrong run."""
    start(shell, {"command": "ls", "lines": 1}, key="k")
    with pytest.raises(IdempotencyKeyReused, match='idempotency key "k"'):
        start(shell, {"command": "rm -rf /", "lines": 1}, key="k")
    assert Run.objects.count() == 1


def test_start_concurrent_same_key_makes_one_run() -> None:
    """Two starts racing with one key get the same run; the database holds one."""
    job = registry.get("tests.sleep")
    results = concurrently(4, lambda: start(job, {"seconds": 0}, key="race").pk)
    assert all(not isinstance(r, Exception) for r in results), results
    assert len(set(results)) == 1
    assert Run.objects.count() == 1


def test_start_concurrent_starts_respect_the_concurrency_limit() -> None:
    """Racing starts of a one-at-a-time job: one run, the others refused by the limit."""
    results = concurrently(4, lambda: start(shell, {"command": "ls", "lines": 1}))
    runs = [r for r in results if isinstance(r, Run)]
    refused = [r for r in results if isinstance(r, ConcurrencyLimitReached)]
    assert (len(runs), len(refused)) == (1, 3), results
    assert Run.objects.count() == 1


def test_start_concurrency_key_limits_per_owner() -> None:
    """A concurrency key makes the limit per owner: one each, a second for one owner refused."""
    users = get_user_model().objects
    alice, bob = users.create_user("alice"), users.create_user("bob")
    job = registry.get("tests.one_per_owner")
    start(job, {"label": "a"}, owner=alice)
    start(job, {"label": "b"}, owner=bob)
    with pytest.raises(ConcurrencyLimitReached, match='for key "user:'):
        start(job, {"label": "a2"}, owner=alice)
    assert Run.objects.count() == 2


def test_start_allowed_again_once_the_run_finished() -> None:
    """The concurrency limit counts unfinished runs only."""
    start(shell, {"command": "ls", "lines": 0})
    execute_all()
    start(shell, {"command": "ls", "lines": 0})
    assert Run.objects.count() == 3  # two shells and the notify the first one chained


def test_async_job_runs_to_done() -> None:
    """An ``async def`` job runs, changes its state and returns its result."""
    run = start(registry.get("tests.async_sum"), {"seconds": 0.01})
    execute_all()
    done = Run.objects.select_related("state").get(pk=run.pk)
    assert done.status == RunStatus.DONE
    assert done.result == 1
    assert done.state is not None
    assert done.state.data == {"steps": 1}


def test_run_receives_attempt_and_no_transaction() -> None:
    """The run step executes outside any transaction and sees its attempt number."""
    run = start(registry.get("tests.noop"))
    execute_all()
    assert Run.objects.get(pk=run.pk).attempt == 1


def test_finish_hook_commits_with_the_outcome() -> None:
    """A finish hook's document change and chained start commit with the outcome."""
    run = start(registry.get("tests.chain"), {"fail": False})
    execute_all()
    assert Run.objects.get(pk=run.pk).status == RunStatus.DONE
    assert Document.objects.get(key="tests:chain").data == {"finishes": 1}
    assert Run.objects.filter(job="tests.noop", status=RunStatus.DONE).count() == 1


def test_finish_hook_that_raises_rolls_back_everything_it_did() -> None:
    """A hook that raises after starting a job leaves no job and no change, and says so."""
    run = start(registry.get("tests.chain"), {"fail": True})
    execute_all()
    failed = Run.objects.get(pk=run.pk)
    assert failed.status == RunStatus.FAILED
    assert failed.error_type == "ValueError"
    assert failed.error_message == "finish hook failed: ValueError: the finish hook broke"
    assert not Run.objects.filter(job="tests.noop").exists()
    assert not Document.objects.filter(key="tests:chain").exists()


def test_finish_happens_once() -> None:
    """A second finish of the same run changes nothing and its hook does not run again."""
    run = start(registry.get("tests.watched_sleep"), {"seconds": 0})
    now = timezone.now()
    assert finish(run.pk, RunStatus.LOST, now=now, changes=Changes()) is not None
    assert finish(run.pk, RunStatus.DONE, now=now, changes=Changes()) is None
    assert Run.objects.get(pk=run.pk).status == RunStatus.LOST
    assert Document.objects.get(key=f"tests:finishes:{run.pk}").data["count"] == 1


def test_abort_of_a_queued_run_finishes_it_at_once() -> None:
    """A run no worker has claimed is aborted without waiting for one."""
    run = start(shell, {"command": "ls", "lines": 1})
    assert abort(run)
    aborted = Run.objects.get(pk=run.pk)
    assert aborted.status == RunStatus.ABORTED
    assert aborted.abort_requested_at is not None
    assert not abort(aborted), "aborting a finished run is refused"


def test_abort_stops_a_running_run_at_its_next_sleep(running_worker: Worker) -> None:
    """An abort is a request: the run raises at its next sleep and finishes aborted."""
    run = start(registry.get("tests.watched_sleep"), {"seconds": 600})
    wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, what="the run")
    assert abort(run)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="the abort")
    assert Run.objects.get(pk=run.pk).status == RunStatus.ABORTED
    assert Document.objects.get(key=f"tests:finishes:{run.pk}").data["kinds"] == ["aborted"]


def test_blocked_run_is_not_executed_and_can_be_aborted() -> None:
    """A run of a job version not deployed here is blocked: never claimed, args never decoded."""
    blocked = Run.objects.create(
        job="shell.run",
        job_version=99,
        args={"from": "an older release"},
        created_at=timezone.now(),
    )
    unknown = Run.objects.create(job="gone.job", args={}, created_at=timezone.now())
    execute_all()
    for run in (blocked, unknown):
        run.refresh_from_db()
        assert run.status == RunStatus.QUEUED
        assert phase(run) == "blocked"
        assert run.attempt == 0
    assert abort(blocked)
    assert Run.objects.get(pk=blocked.pk).status == RunStatus.ABORTED


def test_document_concurrent_changes_lose_no_update() -> None:
    """Two writers changing one document: every change lands, the revision counts them."""
    document = open_document("tests:counter", schema="tests.counter", initial=lambda: {"n": 0})

    def bump_ten() -> None:
        mine = Document.objects.get(pk=document.pk)
        for _ in range(10):
            change_document(mine, lambda data: data.__setitem__("n", data["n"] + 1))

    results = concurrently(2, bump_ten)
    assert results == [None, None]
    document.refresh_from_db()
    assert document.data == {"n": 20}
    assert document.revision == 20


def test_run_returning_non_json_fails_with_a_clear_error() -> None:
    """A result JSON cannot hold fails the run with a message, instead of leaving it running."""
    run = start(registry.get("tests.returns_a_moment"))
    execute_all()
    failed = Run.objects.get(pk=run.pk)
    assert (failed.status, failed.error_type) == (RunStatus.FAILED, "InvalidResult")
    assert "not JSON" in failed.error_message


def test_run_that_swallows_the_abort_is_still_aborted(running_worker: Worker) -> None:
    """A job that catches RunAborted and returns is finished aborted, on every database."""
    run = start(registry.get("tests.swallows_abort"), {"seconds": 600})
    wait_for(lambda: Run.objects.get(pk=run.pk).status == RunStatus.RUNNING, what="the run")
    abort(run)
    wait_for(lambda: Run.objects.get(pk=run.pk).is_finished, what="the abort")
    assert Run.objects.get(pk=run.pk).status == RunStatus.ABORTED


def test_run_that_never_checks_finishes_done_despite_an_abort_request() -> None:
    """An abort is a request: a run that never sleeps or checks completes as done."""
    run = start(registry.get("tests.spin"), {"seconds": 0})
    Run.objects.filter(pk=run.pk).update(abort_requested_at=timezone.now())
    execute_all()
    assert Run.objects.get(pk=run.pk).status == RunStatus.DONE


def test_run_end_flushes_a_throttle_the_job_did_not_stop() -> None:
    """A throttled write still pending when the job returns reaches the final state."""
    run = start(registry.get("tests.forgets_to_flush"))
    execute_all()
    done = Run.objects.select_related("state").get(pk=run.pk)
    assert done.status == RunStatus.DONE
    assert done.state is not None
    assert done.state.data == {"text": "first\nlast\n"}


# -- the start validator ----------------------------------------------------------------------


def starter() -> Any:
    """A user who may start runs."""
    user = get_user_model().objects.create_user("starter")
    user.user_permissions.add(Permission.objects.get(codename="add_run"))
    return get_user_model().objects.get(pk=user.pk)


def test_parse_start_names_every_bad_field_at_once() -> None:
    """A start's input with several problems is refused naming each field, nothing written."""
    user = starter()
    with pytest.raises(ValidationError) as refused:
        parse_start(user, {"job": " ", "args": [1]}, key_field="request_id")
    assert refused.value.message_dict == {
        "job": ["This field may not be blank."],
        "args": ['Expected a dictionary of items but got type "list".'],
        "request_id": ["This field is required."],
    }
    with pytest.raises(ValidationError) as not_an_object:
        parse_start(user, ["tests.noop"])
    assert not_an_object.value.message_dict == {
        NON_FIELD_ERRORS: ["Expected an object, but got list."]
    }
    assert not Run.objects.exists()


def test_parse_start_reads_the_job_its_args_and_the_key() -> None:
    """A good input names a deployed job; the key is the given one, or the data's own field."""
    user = starter()
    request = parse_start(
        user, {"job": " shell.run ", "args": {"command": "ls", "lines": 1}}, key="k"
    )
    assert (request.job, request.args, request.key, request.owner) == (
        shell,
        {"command": "ls", "lines": 1},
        "k",
        None,
    )
    framed = parse_start(user, {"job": "tests.noop", "request_id": "r-1"}, key_field="request_id")
    assert (framed.job.name, framed.args, framed.key) == ("tests.noop", {}, "r-1")
    with pytest.raises(UnknownJob):
        parse_start(user, {"job": "tests.nope"})


def test_parse_start_refuses_a_user_who_may_not_start_runs_before_reading_anything() -> None:
    """Whatever the input, one without add_run is refused first: no job is looked up."""
    guest = get_user_model().objects.create_user("guest")
    for data in ({"job": "tests.nope"}, {"job": ".x"}, ["tests.noop"], {"x": 1}):
        with pytest.raises(Forbidden, match=r"needs django_weft\.add_run"):
            parse_start(guest, data)


def test_start_request_refuses_a_priority_out_of_range() -> None:
    """The priority is checked as the request is made, before anything is written."""
    with pytest.raises(ValueError, match="priority must be a whole number from -100 to 100"):
        start(shell, {"command": "ls", "lines": 1}, priority=101)
    assert not Run.objects.exists()


# -- schedule edits ---------------------------------------------------------------------------


def test_edit_writes_only_what_it_changes_and_keeps_the_scheduler_record() -> None:
    """An edit from a row read before a fire keeps next_due and the last-run record."""
    editor = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    stale = Schedule.objects.create(name="hourly", job="tests.noop", every=timedelta(hours=1))
    due = timezone.now() + timedelta(hours=1)
    Schedule.objects.filter(pk=stale.pk).update(armed=True, next_due=due, last_status=LastStatus.OK)
    edited = edit_schedule_for(editor, stale, {"args": {}, "name": "renamed"})
    stored = Schedule.objects.get(pk=stale.pk)
    assert (stored.name, stored.armed, stored.next_due, stored.last_status) == (
        "renamed",
        True,
        due,
        LastStatus.OK,
    )
    assert edited.name == "renamed"


@pytest.mark.parametrize(
    "changes",
    [{"every": timedelta(hours=2)}, {"every": "2:00:00"}, {"enabled": False}],
    ids=["plan", "plan-as-text", "switched-off"],
)
def test_edit_of_the_plan_re_arms_the_row_it_returns(changes: dict[str, Any]) -> None:
    """A plan edit (or switching the row off) clears armed and next_due, stored and returned."""
    editor = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    row = Schedule.objects.create(name="hourly", job="tests.noop", every=timedelta(hours=1))
    Schedule.objects.filter(pk=row.pk).update(armed=True, next_due=timezone.now())
    loaded = Schedule.objects.get(pk=row.pk)
    edited = edit_schedule_for(editor, loaded, changes)
    stored = Schedule.objects.get(pk=row.pk)
    assert (edited.armed, edited.next_due) == (stored.armed, stored.next_due) == (False, None)


def test_edit_that_leaves_the_plan_as_it_was_does_not_re_arm() -> None:
    """The same interval given again as text is no plan edit: the armed slot stays."""
    editor = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    row = Schedule.objects.create(name="hourly", job="tests.noop", every=timedelta(hours=1))
    due = timezone.now() + timedelta(minutes=30)
    Schedule.objects.filter(pk=row.pk).update(armed=True, next_due=due)
    edit_schedule_for(editor, Schedule.objects.get(pk=row.pk), {"every": "1:00:00"})
    assert Schedule.objects.filter(pk=row.pk, armed=True, next_due=due).exists()


def test_describe_refusal_of_a_validation_error_without_fields_gives_its_message() -> None:
    """A ValidationError that names no field is described by its own messages, not a crash."""
    error = ValidationError(["the plan never fires", "the zone is gone"])
    assert operations.describe_refusal(error) == (
        "invalid",
        "the plan never fires; the zone is gone",
        {},
    )


def test_deactivated_owner_may_no_longer_act_on_what_they_own() -> None:
    """Owning a run or a schedule gives a deactivated user nothing: the service layer
    refuses their abort and their edit, as Django gives an inactive user no permission."""
    owner = get_user_model().objects.create_user("olga")
    run = start(shell, {"command": "long", "lines": 1}, owner=owner)
    schedule = Schedule.objects.create(
        name="olga's", job="tests.noop", every=timedelta(hours=1), owner=owner
    )
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    with pytest.raises(Forbidden):
        operations.abort_for(owner, run)
    with pytest.raises(Forbidden):
        edit_schedule_for(owner, schedule, {"every": timedelta(hours=2)})
    run.refresh_from_db()
    assert run.abort_requested_at is None
    assert Schedule.objects.get(pk=schedule.pk).every == timedelta(hours=1)

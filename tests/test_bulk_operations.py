"""Bulk retry, abort and delete in the service layer (django_weft/operations/bulk.py).

Each run is judged for the acting user as its single action judges it; refused runs are
counted by reason and left as they were; batches are their own transactions; a retry
links to the run it retries and keeps its schedule. A filter is narrowed to the runs the
user may act on before any run is read, and has a cap.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.checks import run_checks
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from django_weft import operations
from django_weft.models import AuditAction, AuditRecord, Document, Run, RunStatus, Schedule
from django_weft.operations import bulk_for, parse_ids, start, start_many
from django_weft.operations.bulk import MAX_FILTER_RUNS
from django_weft.signals import run_started
from example_project.shell.jobs import shell
from tests.jobs import noop, sleep

pytestmark = pytest.mark.django_db


def user(name: str, *codenames: str) -> Any:
    made = get_user_model().objects.create_user(name)
    made.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return get_user_model().objects.get(pk=made.pk)


def finished(owner: Any, status: str = RunStatus.FAILED, job: Any = noop, **fields: Any) -> Run:
    """A run of ``job`` owned by ``owner`` that finished a minute ago with ``status``."""
    run = start(job, fields.pop("args", None), owner=owner)
    ended = timezone.now() - timedelta(minutes=1)
    Run.objects.filter(pk=run.pk).update(
        status=status, started_at=ended, finished_at=ended, **fields
    )
    return Run.objects.get(pk=run.pk)


def test_bulk_retry_links_each_retry_to_its_run_and_keeps_the_schedule() -> None:
    """Each retried run gets a new run that names it (retry_of), with its schedule."""
    owner = user("owner", "add_run")
    schedule = Schedule.objects.create(
        name="hourly", job="tests.noop", every=timedelta(hours=1), owner=owner
    )
    fired = finished(owner, schedule=schedule, due=timezone.now())
    plain = finished(owner)
    result = bulk_for(owner, "retry", ids=[fired.pk, plain.pk])
    assert (result.done, result.refused, result.batches) == (2, 0, 1)
    again = Run.objects.get(retry_of=fired)
    assert (again.schedule, again.due, again.owner) == (schedule, None, owner)
    assert Run.objects.get(retry_of=plain).schedule is None
    assert set(result.started) == {str(again.pk), str(Run.objects.get(retry_of=plain).pk)}
    assert list(fired.retries.all()) == [again]
    retried = AuditRecord.objects.filter(action=AuditAction.RETRY)
    assert {record.object_id for record in retried} == {str(fired.pk), str(plain.pk)}


def test_single_retry_links_and_keeps_the_schedule_too() -> None:
    """retry_for, the single retry behind the run page's button, sets the same link."""
    owner = user("owner", "add_run")
    schedule = Schedule.objects.create(
        name="hourly", job="tests.noop", every=timedelta(hours=1), owner=owner
    )
    run = finished(owner, schedule=schedule)
    again = operations.retry_for(owner, run)
    assert (again.retry_of, again.schedule) == (run, schedule)


def test_bulk_refusals_are_counted_by_reason_and_write_nothing() -> None:
    """Another user's run (forbidden), a run still going (not_finished) and an id no run
    has (not_found) are each refused; the runs the user may retry are retried."""
    owner, other = user("owner", "add_run"), user("other", "add_run")
    mine = finished(owner)
    theirs = finished(other)
    going = start(sleep, {"seconds": 60}, owner=owner)
    missing = uuid.uuid4()
    result = bulk_for(owner, "retry", ids=[mine.pk, theirs.pk, going.pk, missing])
    assert (result.done, result.refused) == (1, 3)
    assert {code: reason.count for code, reason in result.reasons.items()} == {
        "forbidden": 1,
        "not_finished": 1,
        "not_found": 1,
    }
    assert "django_weft.view_run" in result.reasons["forbidden"].detail
    assert str(missing) in result.reasons["not_found"].detail
    assert list(Run.objects.filter(retry_of__isnull=False)) == list(mine.retries.all())
    assert not theirs.retries.exists()
    assert not going.retries.exists()
    assert "3 refused" in result.summary()


def test_bulk_retry_of_a_filter_never_retries_the_runs_it_started() -> None:
    """Every run matching, one per batch: the new runs match too, but are not retried."""
    owner = user("owner", "add_run", "view_run")
    runs = [finished(owner, RunStatus.DONE) for _ in range(3)]
    with override_settings(WEFT_BULK_BATCH_SIZE=1):
        result = bulk_for(owner, "retry", matching=Run.objects.all())
    assert (result.done, result.refused) == (3, 0)
    assert result.batches >= 3
    assert Run.objects.count() == 6
    assert {run.retry_of_id for run in Run.objects.filter(retry_of__isnull=False)} == {
        run.pk for run in runs
    }


@pytest.mark.django_db(transaction=True)
def test_bulk_batches_commit_one_after_another() -> None:
    """With batches of 2, five retries commit 2, 2 and 1 at a time: each run's start is
    announced after its batch's commit, and sees its batch's runs and those before."""
    owner = user("owner", "add_run")
    for _ in range(5):
        finished(owner)
    seen: list[int] = []

    def count(sender: Any, **kwargs: Any) -> None:
        seen.append(Run.objects.filter(retry_of__isnull=False).count())

    run_started.connect(count)
    try:
        with override_settings(WEFT_BULK_BATCH_SIZE=2):
            result = bulk_for(owner, "retry", matching=Run.objects.filter(status="failed"))
    finally:
        run_started.disconnect(count)
    assert (result.done, result.batches) == (5, 3)
    assert seen == [2, 2, 4, 4, 5]


def test_bulk_abort_counts_finished_and_asked_before() -> None:
    """Queued runs end at once; a finished run and one already asked are refused."""
    owner = user("owner")
    queued = [start(sleep, {"seconds": 60}, owner=owner) for _ in range(2)]
    done = finished(owner, RunStatus.DONE)
    asked = start(sleep, {"seconds": 60}, owner=owner)
    Run.objects.filter(pk=asked.pk).update(
        status=RunStatus.RUNNING, abort_requested_at=timezone.now()
    )
    result = bulk_for(owner, "abort", ids=[*(run.pk for run in queued), done.pk, asked.pk])
    assert (result.done, result.refused) == (2, 2)
    assert set(result.reasons) == {"finished", "already_requested"}
    assert {Run.objects.get(pk=run.pk).status for run in queued} == {RunStatus.ABORTED}
    assert Run.objects.get(pk=done.pk).status == RunStatus.DONE


def test_bulk_delete_needs_ownership_or_delete_run_and_a_finished_run() -> None:
    """The owner deletes their finished runs (and their state documents); another
    user's run needs delete_run; an unfinished run is refused; retries lose the link."""
    owner, other = user("owner", "add_run"), user("other")
    mine = finished(owner, job=shell, args={"command": "ls", "lines": 1})
    again = operations.retry_for(owner, mine)
    Run.objects.filter(pk=again.pk).update(status=RunStatus.DONE)
    going = start(sleep, {"seconds": 60}, owner=owner)
    state = mine.state_id
    assert state is not None
    result = bulk_for(other, "delete", ids=[mine.pk])
    assert (result.done, set(result.reasons)) == (0, {"forbidden"})
    assert "django_weft.delete_run" in result.reasons["forbidden"].detail
    result = bulk_for(owner, "delete", ids=[mine.pk, going.pk])
    assert (result.done, set(result.reasons)) == (1, {"not_finished"})
    assert not Run.objects.filter(pk=mine.pk).exists()
    assert not Document.objects.filter(pk=state).exists()
    assert Run.objects.get(pk=again.pk).retry_of is None
    deleted = AuditRecord.objects.get(action=AuditAction.RUN_DELETE)
    assert (deleted.object_id, deleted.actor) == (str(mine.pk), owner)
    operator = user("operator", "delete_run")
    assert bulk_for(operator, "delete", matching=Run.objects.filter(pk=again.pk)).done == 1


def savepoints(captured: CaptureQueriesContext) -> int:
    """How many savepoints the captured queries opened: one per run judged on its own."""
    return sum(query["sql"].upper().startswith("SAVEPOINT") for query in captured.captured_queries)


def test_bulk_by_filter_without_the_permission_reads_no_run() -> None:
    """A user who owns none of the 40 matching runs and lacks delete_run is told that all
    40 are forbidden in two queries (their count, and the count of theirs), with no
    transaction and no run read; nothing is deleted or recorded. Their permissions are
    read once beforehand, as the request that asks reads them."""
    others = user("others", "add_run")
    for _ in range(40):
        finished(others)
    nobody = user("nobody")
    nobody.get_all_permissions()
    with CaptureQueriesContext(connection) as captured:
        result = bulk_for(nobody, "delete", matching=Run.objects.all())
    assert len(captured.captured_queries) <= 2, [q["sql"] for q in captured.captured_queries]
    assert savepoints(captured) == 0
    assert (result.done, result.refused, result.batches) == (0, 40, 0)
    assert {code: reason.count for code, reason in result.reasons.items()} == {"forbidden": 40}
    assert result.reasons["forbidden"].detail == (
        "you may not delete runs that are not yours (needs django_weft.delete_run)"
    )
    assert Run.objects.count() == 40
    assert not AuditRecord.objects.exists()


def test_bulk_retry_by_filter_without_add_run_is_one_query() -> None:
    """Retrying needs add_run whoever owns the run: without it, even the user's own runs
    are refused, counted in one query."""
    owner = user("owner")
    for _ in range(5):
        finished(owner)
    owner.get_all_permissions()
    with CaptureQueriesContext(connection) as captured:
        result = bulk_for(owner, "retry", matching=Run.objects.all())
    assert len(captured.captured_queries) == 1
    assert (result.done, result.refused) == (0, 5)
    assert result.reasons["forbidden"].detail == (
        "you may not retry runs (needs django_weft.add_run)"
    )
    assert not Run.objects.filter(retry_of__isnull=False).exists()


def test_bulk_by_filter_reads_only_the_users_own_runs() -> None:
    """Of 40 matching runs, the user's 3 are aborted, each judged on its own (a savepoint
    each); the other 37 are counted as forbidden without being judged one by one."""
    owner, others = user("owner"), user("others")
    mine = [start(sleep, {"seconds": 60}, owner=owner) for _ in range(3)]
    for _ in range(37):
        start(sleep, {"seconds": 60}, owner=others)
    with CaptureQueriesContext(connection) as captured:
        result = bulk_for(owner, "abort", matching=Run.objects.all())
    assert (result.done, result.refused) == (3, 37)
    assert result.reasons["forbidden"].detail == (
        "you may not abort runs that are not yours (needs django_weft.change_run)"
    )
    assert savepoints(captured) < 37
    aborted = Run.objects.filter(status=RunStatus.ABORTED)
    assert set(aborted.values_list("pk", flat=True)) == {run.pk for run in mine}


def test_bulk_by_filter_over_the_cap_is_refused_naming_it() -> None:
    """A filter matching more than MAX_FILTER_RUNS runs is refused as a whole, naming the
    cap; nothing is done and nothing recorded. A filter narrowed below it goes on."""
    owner = user("owner", "add_run")
    runs = start_many(noop, [{}] * (MAX_FILTER_RUNS + 1), owner=owner)
    with pytest.raises(ValidationError) as refused:
        bulk_for(owner, "abort", matching=Run.objects.all())
    assert refused.value.messages == [
        "This filter matches more than 10000 runs, the most one bulk action by filter "
        "takes; narrow the filter (by status, job, owner or time) and repeat it, or name "
        "the runs by id."
    ]
    assert not Run.objects.exclude(status=RunStatus.QUEUED).exists()
    assert not AuditRecord.objects.exists()
    assert bulk_for(owner, "abort", matching=Run.objects.filter(pk=runs[0].pk)).done == 1


def test_parse_ids_names_what_is_wrong() -> None:
    """Not a list, empty, too many, or items that are not run ids: each named."""
    for value, words in [
        ("abc", "Expected a list"),
        ([], "at least one"),
        ([str(uuid.uuid4())] * (operations.MAX_BULK_IDS + 1), "At most 1000"),
        ([str(uuid.uuid4()), "nope", 7], "1: 'nope', 2: 7"),
    ]:
        with pytest.raises(ValidationError) as refused:
            parse_ids(value)
        assert words in refused.value.message_dict["ids"][0]
    same = str(uuid.uuid4())
    assert parse_ids([same, same]) == [uuid.UUID(same)]


def test_unknown_bulk_action_is_refused_naming_it() -> None:
    with pytest.raises(ValidationError) as refused:
        bulk_for(user("owner"), "explode", ids=[uuid.uuid4()])
    assert "explode" in refused.value.message_dict["action"][0]


@pytest.mark.parametrize("value", [0, -1, "500", True, 2.5])
def test_check_e080_bulk_batch_size(value: Any) -> None:
    """E080: WEFT_BULK_BATCH_SIZE is a positive whole number."""
    with override_settings(WEFT_BULK_BATCH_SIZE=value):
        found = [message for message in run_checks() if message.id == "django_weft.E080"]
    assert len(found) == 1
    assert "WEFT_BULK_BATCH_SIZE" in found[0].msg

"""Groups (DESIGN.md section 9): members and group in one transaction, the callback
exactly once in the finish of the last member, the conditions, batches and the seal,
abort, idempotency, permissions and the audit trail; on the driven clock."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from django_weft.engine.flows.groups import Callback
from django_weft.engine.runs.starting import StartRequest
from django_weft.exceptions import Forbidden, GroupClosed, InvalidArgs, InvalidBatchItem
from django_weft.jobs.registry import registry
from django_weft.models import AuditAction, AuditRecord, Group, Run, RunStatus
from django_weft.operations import (
    abort,
    abort_group,
    add_to_group,
    seal_group,
    start,
    start_group,
    start_group_for,
)
from django_weft.testing import Rehearsal
from tests.observe.conftest import scrape, value
from tests.threads import together

pytestmark = pytest.mark.django_db(transaction=True)

NOW = timedelta(0)


def members(*numbers: int, failing: tuple[int, ...] = ()) -> list[StartRequest]:
    job = registry.get("tests.flows.member")
    return [StartRequest(job, {"number": n, "fail": n in failing}) for n in numbers]


def gather(label: str = "") -> Callback:
    return Callback(registry.get("tests.flows.gather"), {"label": label})


def callback_of(group: Group) -> Run:
    group.refresh_from_db()
    assert group.callback_run is not None, "the callback started"
    return Run.objects.get(pk=group.callback_run_id)


def test_group_calls_back_once_with_the_summary(rehearsal: Rehearsal) -> None:
    group = start_group(members(1, 2, 3), callback=gather("squares"), name="squares")
    assert (group.total, group.unfinished, group.is_sealed) == (3, 3, True)
    assert Run.objects.filter(group=group).count() == 3
    rehearsal.advance(NOW)
    rehearsal.advance(NOW)
    callback = callback_of(group)
    assert callback.status == RunStatus.DONE
    assert callback.args == {"label": "squares", "group": str(group.pk)}
    assert callback.result == {
        "label": "squares",
        "summary": {"total": 3, "unfinished": 0, "done": 3, "failed": 0, "aborted": 0, "lost": 0},
        "results": [1, 4, 9],
    }
    assert Run.objects.filter(job="tests.flows.gather").count() == 1
    group.refresh_from_db()
    assert group.ended_at is not None


def test_all_ended_calls_back_whatever_the_outcomes(rehearsal: Rehearsal) -> None:
    group = start_group(members(1, 2, failing=(2,)), callback=gather())
    rehearsal.advance(NOW)
    rehearsal.advance(NOW)
    assert callback_of(group).result["summary"]["failed"] == 1


def test_all_done_calls_the_failure_callback_when_one_failed(rehearsal: Rehearsal) -> None:
    group = start_group(
        members(1, 2, failing=(1,)),
        callback=gather("ok"),
        on_failure=gather("broken"),
        condition="all_done",
    )
    rehearsal.advance(NOW)
    rehearsal.advance(NOW)
    assert callback_of(group).result["label"] == "broken"
    assert Run.objects.filter(job="tests.flows.gather").count() == 1


def test_all_done_without_a_failure_callback_starts_nothing_on_failure(
    rehearsal: Rehearsal,
) -> None:
    group = start_group(members(1, failing=(1,)), callback=gather(), condition="all_done")
    rehearsal.advance(NOW)
    group.refresh_from_db()
    assert (group.ended_at is not None, group.callback_run_id) == (True, None)


def test_group_built_in_batches_calls_back_only_once_sealed(rehearsal: Rehearsal) -> None:
    group = start_group(members(1), callback=gather(), sealed=False)
    rehearsal.advance(NOW)
    group.refresh_from_db()
    assert (group.unfinished, group.callback_run_id) == (0, None), "open: no callback yet"
    add_to_group(group, members(2, 3))
    rehearsal.advance(NOW)
    assert seal_group(group) is True
    assert seal_group(group) is False, "sealed once"
    rehearsal.advance(NOW)
    assert callback_of(group).result["results"] == [1, 4, 9]
    with pytest.raises(GroupClosed, match="is sealed"):
        add_to_group(group, members(4))
    assert Run.objects.filter(group=group).count() == 3


def test_a_bad_member_or_callback_starts_nothing() -> None:
    with pytest.raises(InvalidBatchItem, match="item 1 of the batch"):
        start_group(
            [*members(1), StartRequest(registry.get("tests.flows.member"), {"numbr": 1})],
            callback=gather(),
        )
    with pytest.raises(InvalidArgs):
        start_group(members(1), callback=Callback(registry.get("tests.flows.gather"), {"x": 1}))
    keyed = StartRequest(registry.get("tests.flows.member"), {"number": 1}, key="k")
    with pytest.raises(InvalidBatchItem, match="no idempotency key"):
        start_group([keyed])
    assert not Group.objects.exists()
    assert not Run.objects.exists()


def test_group_key_returns_the_same_group() -> None:
    first = start_group(members(1, 2), key="album-7")
    again = start_group(members(1, 2), key="album-7")
    assert again.pk == first.pk
    assert Run.objects.count() == 2


def test_abort_group_ends_its_unclaimed_members_and_calls_back(rehearsal: Rehearsal) -> None:
    group = start_group(members(1, 2), callback=gather(), on_failure=gather("aborted"))
    assert abort_group(group) == 2
    assert set(Run.objects.filter(group=group).values_list("status", flat=True)) == {
        RunStatus.ABORTED
    }
    rehearsal.advance(NOW)
    assert callback_of(group).result["summary"]["aborted"] == 2


def test_retried_member_counts_once_at_its_end(rehearsal: Rehearsal) -> None:
    job = registry.get("tests.flows.checkout")
    group = start_group([StartRequest(job, {"fail_attempts": 1})], callback=gather())
    rehearsal.advance(NOW)
    group.refresh_from_db()
    assert (group.unfinished, group.callback_run_id) == (1, None), "a retry has not ended"
    rehearsal.advance(timedelta(minutes=1))
    group.refresh_from_db()
    assert (group.done, group.failed, group.unfinished) == (1, 0, 0)
    rehearsal.advance(NOW)
    assert callback_of(group).status == RunStatus.DONE


def test_last_members_finishing_at_once_call_back_once() -> None:
    """Two members ended by two threads at the same moment (aborts, each in its own
    transaction): the group ends once, its callback started once."""
    for _ in range(10):
        group = start_group(members(1, 2), callback=gather())
        first, second = Run.objects.filter(group=group)
        outcomes = together(lambda run=first: abort(run), lambda run=second: abort(run))
        assert not any(isinstance(outcome, Exception) for outcome in outcomes), outcomes
        group.refresh_from_db()
        assert (group.unfinished, group.aborted, group.callback_run_id is not None) == (0, 2, True)
    assert Run.objects.filter(job="tests.flows.gather").count() == 10


def test_group_for_needs_add_run_and_is_on_record() -> None:
    users = get_user_model().objects
    guest = users.create_user("guest")
    with pytest.raises(Forbidden, match="add_run"):
        start_group_for(guest, members(1))
    owner = users.create_user("owner")
    owner.user_permissions.add(Permission.objects.get(codename="add_run"))
    owner = users.get(pk=owner.pk)
    group = start_group_for(owner, members(1, 2), callback=gather())
    assert set(Run.objects.values_list("owner", flat=True)) == {owner.pk}
    record = AuditRecord.objects.get(action=AuditAction.GROUP_START)
    assert (record.actor, record.details) == (owner, {"members": 2})
    start_group_for(owner, members(1, 2), key="once")
    start_group_for(owner, members(1, 2), key="once")
    assert AuditRecord.objects.filter(action=AuditAction.GROUP_START).count() == 2
    assert group.owner == owner


def test_group_end_is_counted_by_outcome_for_the_metrics(rehearsal: Rehearsal) -> None:
    before = scrape()
    start_group(members(1, 2))
    start_group(members(3, failing=(3,)))
    rehearsal.advance(NOW)
    after = scrape()
    for outcome in ("done", "failed"):
        grew = value(after, "weft_groups_ended_total", outcome=outcome) - value(
            before, "weft_groups_ended_total", outcome=outcome
        )
        assert grew == 1, outcome


def test_finish_hook_starts_a_group_with_its_outcome(rehearsal: Rehearsal) -> None:
    """A group started by a finish hook exists once that finish commits, owned as the
    finishing run is."""
    run = start(registry.get("tests.flows.fan_out"), {"count": 3})
    rehearsal.advance(NOW)
    (group,) = Group.objects.all()
    assert (group.total, group.name) == (3, f"fan-out of run {run.pk}")
    rehearsal.advance(NOW)
    rehearsal.advance(NOW)
    assert callback_of(group).result["results"] == [0, 1, 4]

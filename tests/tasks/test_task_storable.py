"""A task's args go through the one storable check every start path makes: a value no
database stores is refused naming its path, and nothing is written.

Before, a task's args skipped it: on SQLite a lone surrogate was stored (and every run
list showing that run answered 500 from then on); on PostgreSQL the INSERT failed with a
500 and broke the caller's transaction.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.db import transaction
from rest_framework.test import APIClient

from django_weft import operations
from django_weft.engine.schedules.saving import save_schedule
from django_weft.exceptions import InvalidArgs, InvalidBatchItem
from django_weft.jobs.registry import registry
from django_weft.jobs.storable import NOT_FINITE_REFUSAL, NUL_REFUSAL, SURROGATE_REFUSAL
from django_weft.models import Run, Schedule
from tests.tasks import fixtures

pytestmark = pytest.mark.django_db(transaction=True)

SURROGATE = "\ud800"
RUNS = "/api/weft/runs/"
PATH = fixtures.noop_task.module_path

UNSTORABLE = [
    pytest.param((SURROGATE,), {}, "args[0]", SURROGATE_REFUSAL, id="surrogate-positional"),
    pytest.param((), {"note": "a\x00b"}, "kwargs.note", NUL_REFUSAL, id="nul-keyword"),
    pytest.param(
        (), {"deep": [1, {"x": math.nan}]}, "kwargs.deep[1].x", NOT_FINITE_REFUSAL, id="nan"
    ),
]


@pytest.mark.parametrize(("args", "kwargs", "where", "problem"), UNSTORABLE)
def test_enqueue_refuses_unstorable_args_in_the_callers_transaction(
    args: tuple[Any, ...], kwargs: dict[str, Any], where: str, problem: str
) -> None:
    """``enqueue()`` raises ``InvalidArgs`` naming the path, writes nothing, and the
    caller's transaction goes on (on PostgreSQL no failed statement broke it)."""
    with transaction.atomic():
        with pytest.raises(InvalidArgs) as refused:
            fixtures.noop_task.enqueue(*args, **kwargs)
        assert refused.value.errors == {where: [problem]}
        kept = fixtures.noop_task.enqueue("after")
    (run,) = Run.objects.all()
    assert (str(run.pk), run.args) == (kept.id, {"args": ["after"], "kwargs": {}})


@pytest.fixture
def starter() -> APIClient:
    user = get_user_model().objects.create_user("starter")
    user.user_permissions.add(*Permission.objects.filter(codename="add_run"))
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(pk=user.pk))
    return client


def test_api_start_of_a_task_with_a_lone_surrogate_is_a_400_naming_it(starter: APIClient) -> None:
    """The body's ``\\ud800`` escape decodes to a lone surrogate: a 400 naming
    ``args.args[0]``, no run, and the run list still answers."""
    registry.get(PATH)  # the web process knows the declared task
    body = json.dumps({"job": PATH, "args": {"args": [SURROGATE], "kwargs": {}}})
    assert "\\ud800" in body
    response = starter.post(RUNS, body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json() == {"args": {"args[0]": [SURROGATE_REFUSAL]}}
    assert not Run.objects.exists()
    assert starter.get(RUNS).status_code == 200


def test_a_bulk_start_of_a_task_refuses_the_item_naming_its_index_and_path() -> None:
    """``start_many`` names the bad item and the path within it; nothing is written."""
    with pytest.raises(InvalidBatchItem) as refused:
        operations.start_many(PATH, [{"args": [1]}, {"args": [], "kwargs": {"x": SURROGATE}}])
    assert refused.value.index == 1
    assert refused.value.fields == {"args.kwargs.x": [SURROGATE_REFUSAL]}
    assert not Run.objects.exists()


def test_a_schedule_of_a_task_with_unstorable_args_is_refused_on_save() -> None:
    """A schedule's save checks its args the way a start does, naming the path."""
    registry.get(PATH)
    schedule = Schedule(
        name="surrogate",
        job=PATH,
        args={"args": [SURROGATE]},
        cron="0 7 * * *",
        timezone="UTC",
    )
    with pytest.raises(ValidationError) as refused:
        save_schedule(schedule)
    assert refused.value.message_dict == {"args": [f"args[0]: {SURROGATE_REFUSAL}"]}
    assert not Schedule.objects.exists()

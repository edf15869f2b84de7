"""NUL characters (``\\u0000``) from a job or a client never reach the database, on any.

PostgreSQL refuses them (``jsonb`` and ``text`` alike) with a ``DataError``; SQLite
stores them. On both, JSON holding one is refused where it comes in, naming its path,
and text that only reports (errors, output) shows each as "␀"; a run that meets one
ends with its row written whole, and the worker's next run goes on.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from django_weft import operations
from django_weft.engine.schedules.saving import save_schedule
from django_weft.exceptions import InvalidArgs, InvalidIdempotencyKey
from django_weft.jobs.registry import registry
from django_weft.jobs.revisions import InvalidDocument
from django_weft.jobs.storable import (
    NOT_FINITE_REFUSAL,
    NUL_REFUSAL,
    NUL_SHOWN,
    SURROGATE_REFUSAL,
    SURROGATE_SHOWN,
)
from django_weft.models import Document, Run, RunStatus, Schedule
from django_weft.operations.refusals import describe_refusal
from django_weft.testing import Rehearsal
from tests.jobs import NUL

pytestmark = pytest.mark.django_db(transaction=True)


def run_job(rehearsal: Rehearsal, name: str) -> Run:
    """Run ``name`` through the worker, then a plain run after it; return the first run.

    The second run ending ``done`` shows the worker went on after whatever the first did.
    """
    run = operations.start(registry.get(name))
    rehearsal.advance(timedelta(0))
    after = operations.start(registry.get("tests.greet"), {"name": "next"})
    rehearsal.advance(timedelta(0))
    after.refresh_from_db()
    assert (after.status, after.result) == (RunStatus.DONE, "hello, next")
    return Run.objects.select_related("state").get(pk=run.pk)


def assert_failed_whole(run: Run, error_type: str, message: str) -> None:
    """The run failed with ``error_type`` and ``message`` in its row, written whole."""
    assert (run.status, run.error_type) == (RunStatus.FAILED, error_type), run.error_message
    assert message in run.error_message
    assert run.finished_at is not None
    assert run.result is None
    assert error_type in run.error_traceback
    assert NUL not in run.error_message + run.error_traceback


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ({"note": f"a{NUL}b"}, "note"),
        ({"items": [0, {"name": NUL}]}, "items[1].name"),
        ({f"k{NUL}": 1}, '["k\\u0000"]'),
    ],
    ids=["arg", "nested", "key"],
)
def test_nul_in_start_args_is_refused_naming_the_field(args: dict[str, Any], where: str) -> None:
    """A start whose args hold a NUL is refused naming where, and writes nothing."""
    with pytest.raises(InvalidArgs) as refused:
        operations.start(registry.get("tests.anything"), args)
    assert refused.value.errors == {where: [NUL_REFUSAL]}
    assert f"{where}: NUL characters (\\u0000) cannot be stored" in str(refused.value)
    assert describe_refusal(refused.value)[2] == {f"args.{where}": [NUL_REFUSAL]}
    assert not Run.objects.exists()


def test_nul_in_schedule_args_is_refused_naming_the_field() -> None:
    """A schedule whose args hold a NUL is refused on save, naming the arg."""
    schedule = Schedule(
        name="nul", job="tests.anything", args={"note": NUL}, every=timedelta(hours=1)
    )
    with pytest.raises(ValidationError) as refused:
        save_schedule(schedule)
    assert refused.value.message_dict == {"args": [f"note: {NUL_REFUSAL}"]}
    assert not Schedule.objects.exists()


def test_nul_in_an_idempotency_key_is_refused() -> None:
    """A client's idempotency key (a socket's request id) holding a NUL is refused."""
    with pytest.raises(InvalidIdempotencyKey, match=r"NUL characters \(\\u0000\)"):
        operations.start(registry.get("tests.noop"), key=f"request{NUL}1")
    assert not Run.objects.exists()


def test_nul_in_the_result_fails_the_run_naming_where(rehearsal: Rehearsal) -> None:
    """A result holding a NUL fails the run (InvalidResult) naming where, not a DataError."""
    run = run_job(rehearsal, "tests.nul_result")
    assert_failed_whole(
        run,
        "InvalidResult",
        'job "tests.nul_result" returned a result it cannot store: '
        f"result.rows[1].note: {NUL_REFUSAL}",
    )


def test_nan_in_the_result_fails_the_run_naming_where(rehearsal: Rehearsal) -> None:
    """A result holding NaN fails the run (InvalidResult) naming where: jsonb refuses it."""
    run = run_job(rehearsal, "tests.nan_result")
    assert_failed_whole(
        run,
        "InvalidResult",
        'job "tests.nan_result" returned a result it cannot store: '
        f"result.ratio: {NOT_FINITE_REFUSAL}",
    )


def test_lone_surrogate_in_args_is_refused_naming_the_field() -> None:
    """Args holding a lone surrogate (not UTF-8) are refused like a NUL, naming the field."""
    with pytest.raises(InvalidArgs) as refused:
        operations.start(registry.get("tests.anything"), {"note": "a\ud800"})
    assert refused.value.errors == {"note": [SURROGATE_REFUSAL]}
    assert not Run.objects.exists()


def test_lone_surrogate_in_an_error_is_replaced(rehearsal: Rehearsal) -> None:
    """An error's message holding a lone surrogate is stored with U+FFFD in its place."""
    run = run_job(rehearsal, "tests.surrogate_error")
    assert_failed_whole(run, "ValueError", f"half an emoji: {SURROGATE_SHOWN}")


def test_nul_in_an_error_is_shown_as_the_symbol_for_null(rehearsal: Rehearsal) -> None:
    """An error's message and traceback show a NUL as "␀"; the row keeps the rest."""
    run = run_job(rehearsal, "tests.nul_error")
    assert_failed_whole(run, "ValueError", f"a byte {NUL_SHOWN} nobody can store")
    assert f"ValueError: a byte {NUL_SHOWN} nobody can store" in run.error_traceback


def test_nul_in_a_state_change_is_refused_at_the_change(rehearsal: Rehearsal) -> None:
    """A state change holding a NUL is refused where the job makes it, naming the path;
    nothing of it is written and the run fails with the refusal."""
    run = run_job(rehearsal, "tests.nul_state")
    assert_failed_whole(
        run,
        "InvalidDocument",
        f'document "run:{run.pk}" cannot store this change: data.note: {NUL_REFUSAL}',
    )
    assert run.state is not None
    assert (run.state.data, run.state.revision) == ({"steps": 1}, 0)


def test_nul_in_output_is_shown_as_the_symbol_for_null(rehearsal: Rehearsal) -> None:
    """Output written through an OutputBuffer shows a NUL as "␀" and is stored."""
    run = run_job(rehearsal, "tests.nul_output")
    assert (run.status, run.result) == (RunStatus.DONE, "printed")
    assert run.state is not None
    assert run.state.data == {"output": f"before{NUL_SHOWN}after\n"}


def test_nul_in_an_application_document_is_refused() -> None:
    """Documents a project's code opens or changes refuse a NUL too; nothing is written."""
    with pytest.raises(InvalidDocument, match=r"data\.seed"):
        operations.open_document("tests:nul", schema="tests.nul", initial=lambda: {"seed": NUL})
    assert not Document.objects.filter(key="tests:nul").exists()
    document = operations.open_document("tests:nul", schema="tests.nul")
    with pytest.raises(InvalidDocument, match=r'data\.log\[0\]\["a b"\]'):
        operations.change_document(document, lambda data: data.update(log=[{"a b": NUL}]))
    document.refresh_from_db()
    assert (document.data, document.revision) == ({}, 0)

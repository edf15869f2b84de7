"""The module job and the runner: answers, args, methods, host functions, failures named
by kind, the warm pool, aborts, and the record each run keeps. Real child processes."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections

from django_weft.engine.worker.loop import Worker
from django_weft.exceptions import InvalidArgs
from django_weft.jobs.registry import registry
from django_weft.models import RunStatus, Schedule
from django_weft.operations import abort, start
from django_weft.sandbox.calls import call_module
from django_weft.sandbox.errors import ModuleRaised, UnknownModule
from django_weft.sandbox.protocol import MANDATORY_LAYERS, OPTIONAL_LAYERS
from django_weft.sandbox.runner import ProcessRunner, load_runner
from django_weft.testing import Rehearsal
from tests.processes import wait_for
from tests.sandbox_helpers import assert_failed, limits, run_module, store  # noqa: F401

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("limits"),
    pytest.mark.slow,
    pytest.mark.once,
]

REPORT = (
    "def default():\n    return 'report for ' + context['due'][:10] + ': 3 posts, 12 comments'\n"
)


def test_module_answer_is_the_result(rehearsal: Rehearsal) -> None:
    """The default export's JSON answer is the run's result."""
    run = run_module(rehearsal, "def default():\n    return {'posts': 3, 'tags': ['a', 'b']}\n")
    assert (run.status, run.result) == (RunStatus.DONE, {"posts": 3, "tags": ["a", "b"]})


def test_module_named_method_with_positional_and_keyword_args(rehearsal: Rehearsal) -> None:
    """``method`` names the callable; a list of args is positional, an object by keyword."""
    source = "def scale(value, factor=2):\n    return value * factor\n"
    positional = run_module(rehearsal, source, method="scale", args=[5, 3])
    keywords = run_module(rehearsal, None, method="scale", args={"value": 5})
    assert (positional.result, keywords.result) == (15, 10)


def test_module_missing_method(rehearsal: Rehearsal) -> None:
    """A method the module does not define fails naming it."""
    run = run_module(rehearsal, "def default():\n    return 1\n", method="run")
    assert_failed(run, "MissingMethod", 'module "tests/escape" has no callable named "run"')
    not_callable = run_module(rehearsal, "run = 5\n", method="run")
    assert_failed(not_callable, "MissingMethod", 'has a int, not a callable, named "run"')


def test_module_syntax_error_names_the_line(rehearsal: Rehearsal) -> None:
    """A source that does not compile fails with RestrictedPython's message and its line."""
    run = run_module(rehearsal, "def default():\n    return 1\n\ndef broken(:\n")
    assert_failed(run, "ModuleSyntaxError", "Line 4: SyntaxError")


def test_module_raising_names_the_line(rehearsal: Rehearsal) -> None:
    """An exception the module raises fails the run with its type, message and line."""
    run = run_module(
        rehearsal, "def default():\n    x = 1\n    raise ValueError('no posts today')\n"
    )
    assert_failed(run, "ModuleRaised", "ValueError: no posts today (line 3)")


@pytest.mark.parametrize(
    ("answer", "says"),
    [("{1, 2}", "Object of type set is not JSON serializable"), ("float('nan')", "not JSON")],
    ids=["set", "nan"],
)
def test_module_answer_not_json(rehearsal: Rehearsal, answer: str, says: str) -> None:
    """An answer JSON cannot hold fails the run as an invalid answer."""
    run = run_module(rehearsal, f"def default():\n    return {answer}\n")
    assert_failed(run, "InvalidAnswer", "the answer is not JSON", says)


def test_module_context_has_the_due(rehearsal: Rehearsal) -> None:
    """A scheduled module reads its run's due (and revision) from ``context``."""
    store(REPORT, name="report/daily")
    Schedule.objects.create(
        name="report",
        job="weft.module",
        args={"module": "report/daily"},
        cron="0 12 * * *",
        timezone="America/Toronto",
    )
    rehearsal.advance(timedelta(hours=7))
    schedule = Schedule.objects.get(name="report")
    assert schedule.last_run is not None
    assert schedule.last_run.result == "report for 2026-03-07: 3 posts, 12 comments"


def test_module_run_records_layers_revision_and_output(rehearsal: Rehearsal) -> None:
    """The run's state says which revision ran, every layer and whether it was active,
    and what the module printed."""
    run = run_module(rehearsal, "def default():\n    print('hello')\n    return printed\n")
    assert (run.status, run.result) == (RunStatus.DONE, "hello\n")
    assert run.state is not None
    state = run.state.data
    assert (state["module"], state["output"]) == ("tests/escape", "hello\n")
    assert set(state["layers"]) == {*MANDATORY_LAYERS, *OPTIONAL_LAYERS}
    assert all(state["layers"][name]["active"] for name in MANDATORY_LAYERS)


def test_module_unknown_is_refused_at_start() -> None:
    """Starting ``weft.module`` for a module nobody stored is refused, naming the arg."""
    with pytest.raises(InvalidArgs) as refused:
        start(registry.get("weft.module"), {"module": "nope"})
    assert refused.value.errors == {"module": ['No stored module is named "nope".']}


def test_call_module_from_python() -> None:
    """``call_module`` runs a stored module by name and returns its answer."""
    store("def default(a, b):\n    return a + b\n", name="tests/sum")
    assert call_module("tests/sum", args=[2, 3]).value == 5
    with pytest.raises(UnknownModule, match='no stored module is named "tests/none"'):
        call_module("tests/none")


# -- host functions ----------------------------------------------------------------------------


def test_host_function_granted(rehearsal: Rehearsal) -> None:
    """A granted host function runs on the host with the module's JSON args."""
    run = run_module(
        rehearsal, "def default():\n    return host('tests.add', 2, 3.5)\n", grants=["tests.add"]
    )
    assert (run.status, run.result) == (RunStatus.DONE, 5.5)


def test_host_function_errors_reach_the_module(rehearsal: Rehearsal) -> None:
    """A host function that raises, or answers something not JSON, raises HostError in the
    module, which may catch it; uncaught, it fails the run naming it."""
    source = (
        "def default():\n"
        "    try:\n"
        "        host('tests.fails', 'the database is away')\n"
        "    except HostError as error:\n"
        "        caught = str(error)\n"
        "    return [caught, host('tests.not_json')]\n"
    )
    run = run_module(rehearsal, source, grants=["tests.fails", "tests.not_json"])
    assert_failed(run, "ModuleRaised", "HostError: TypeError: Object of type set", "(line 6)")


def test_host_function_granted_but_unregistered(rehearsal: Rehearsal) -> None:
    """A grant naming no registered function (stored past the save path) is refused."""
    run = run_module(
        rehearsal, "def default():\n    return host('tests.gone')\n", grants=["tests.gone"]
    )
    assert_failed(run, "HostCallRefused", "no host function of that name is registered")


# -- aborts -------------------------------------------------------------------------------------


def test_abort_kills_the_child(running_worker: Worker, settings: Any) -> None:
    """Aborting a run whose module loops kills its child at once: the run ends aborted
    long before any limit (limits of an hour: only the abort can end it within the
    test's deadline)."""
    settings.WEFT_SANDBOX_CPU_SECONDS = 3600
    settings.WEFT_SANDBOX_WALL_SECONDS = 3600.0
    store("def default():\n    while True:\n        pass\n", name="tests/loop")
    run = start(registry.get("weft.module"), {"module": "tests/loop"})
    wait_for(lambda: run.__class__.objects.get(pk=run.pk).status == RunStatus.RUNNING)
    time.sleep(0.5)
    abort(run)
    wait_for(
        lambda: run.__class__.objects.get(pk=run.pk).status == RunStatus.ABORTED,
        120,
        what="the abort to kill the child",
    )


# -- the warm pool ----------------------------------------------------------------------------


def test_pool_children_serve_one_call_each(settings: Any) -> None:
    """With a pool, calls take children that were set up ahead, and no child serves twice:
    each call sees a fresh process (its own random bytes) and none of the previous call's
    state."""
    settings.WEFT_SANDBOX_POOL_SIZE = 2
    settings.WEFT_SANDBOX_IMPORTS = ["os"]  # os.urandom tells processes apart; this test only
    settings.WEFT_SANDBOX_IMPORT_NAMES = {"os": ["urandom"]}
    store(
        "import os\n"
        "SEEN = []\n"
        "def default():\n"
        "    SEEN.append(1)\n"
        "    return [os.urandom(16).hex(), len(SEEN)]\n",
        name="tests/pid",
    )
    runner = load_runner()
    assert isinstance(runner, ProcessRunner)
    assert runner.pool is not None
    first = call_module("tests/pid").value  # cold: the pool starts filling now
    wait_for(lambda: len(runner.pool._ready) == 2, what="the pool to fill")  # type: ignore[union-attr]
    answers = [call_module("tests/pid").value for _ in range(4)]
    processes = [first[0], *(answer[0] for answer in answers)]
    assert len(set(processes)) == 5
    assert {answer[1] for answer in answers} == {1}


def test_pool_discards_children_set_up_under_other_settings(settings: Any) -> None:
    """A child waiting in the pool under old settings is killed, not used."""
    settings.WEFT_SANDBOX_POOL_SIZE = 1
    runner = load_runner()
    assert isinstance(runner, ProcessRunner)
    assert runner.pool is not None
    store("import math\ndef default():\n    return math.floor(2.5)\n", name="tests/math")
    assert call_module("tests/math").value == 2
    wait_for(lambda: len(runner.pool._ready) == 1, what="the pool to fill")  # type: ignore[union-attr]
    waiting = runner.pool._ready[0]  # type: ignore[union-attr]
    runner.pool.take(  # type: ignore[union-attr]
        type(waiting.config)(**{**waiting.config.__dict__, "imports": ("json",)})
    )
    assert not waiting.alive


def test_runner_closed_when_settings_change(settings: Any) -> None:
    """A settings change closes the runner (killing its pool) and the next call makes a new one."""
    settings.WEFT_SANDBOX_POOL_SIZE = 1
    old = load_runner()
    store("def default():\n    return 1\n", name="tests/one")
    call_module("tests/one")
    settings.WEFT_SANDBOX_CPU_SECONDS = 2
    assert load_runner() is not old
    assert isinstance(old, ProcessRunner)
    assert old.pool is not None
    assert old.pool._closed


def test_module_calls_side_by_side(settings: Any) -> None:
    """Calls from several threads at once each get their own child and their own answer."""
    store("def default(n):\n    return n * n\n", name="tests/square")
    answers: dict[int, Any] = {}

    def call(n: int) -> None:
        try:
            answers[n] = call_module("tests/square", args=[n]).value
        finally:
            connections.close_all()  # this thread's own connection, read the module

    threads = [threading.Thread(target=call, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert answers == {n: n * n for n in range(4)}


def test_module_raised_error_class() -> None:
    """Failures are WeftErrors a caller can catch by kind."""
    store("def default():\n    raise KeyError('k')\n", name="tests/raise")
    with pytest.raises(ModuleRaised, match="KeyError: 'k' \\(line 2\\)"):
        call_module("tests/raise")

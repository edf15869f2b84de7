"""Every way a sandbox child ends is one documented error, and its run's row is whole.

``LimitExceeded`` for CPU (whether or not the child ignores SIGXCPU, with and without
bubblewrap), memory, the wall clock and output; ``InvalidAnswer`` for an answer nested
too deep or holding a NUL character; ``ChildFailed`` only for a death no limit explains.
NUL characters in what the module prints or in a failure's message are shown as "␀".
Each run is followed by a plain one that must succeed: the worker goes on. Real
children, on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from django_weft.conf import weft_settings
from django_weft.exceptions import InvalidArgs
from django_weft.jobs.registry import registry
from django_weft.jobs.storable import NUL_REFUSAL, NUL_SHOWN
from django_weft.models import Run, RunStatus
from django_weft.operations import start
from django_weft.sandbox.protocol import (
    MAX_DEPTH,
    OPTIONAL_LAYERS,
    FrameTooDeep,
    decode,
    encode,
    nesting,
)
from django_weft.testing import Rehearsal
from tests.jobs import NUL
from tests.sandbox_helpers import (  # noqa: F401  (limits: a fixture)
    RogueRunner,
    SigxcpuIgnoringRunner,
    limits,
    run_module,
    store,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("limits"),
    pytest.mark.slow,
    pytest.mark.once,
]

WITH_AND_WITHOUT_BUBBLEWRAP = pytest.mark.parametrize(
    "bubblewrap", [True, False], ids=["bubblewrap", "no-bubblewrap"]
)


def nested(depth: int) -> str:
    """Source of a module whose answer nests lists ``depth`` deep."""
    wraps = depth - 1
    return (
        f"def default():\n    d = []\n    for i in range({wraps}):\n        d = [d]\n    return d\n"
    )


def ended(rehearsal: Rehearsal, settings: Any, source: str) -> Run:
    """Run the module to its end, then a module that answers, on the default runner: the
    worker went on and a next child works. Returns the first run, with its state."""
    run = run_module(rehearsal, source)
    settings.WEFT_SANDBOX_RUNNER = "django_weft.sandbox.runner.ProcessRunner"
    after = run_module(rehearsal, "def default():\n    return 'next'\n", name="tests/next")
    assert (after.status, after.result) == (RunStatus.DONE, "next")
    return Run.objects.select_related("state").get(pk=run.pk)


def assert_ended(run: Run, error_type: str, *fragments: str) -> None:
    """The run failed with ``error_type``, its row whole: a message holding each fragment,
    a traceback, a finish time, no result, and the state the job recorded before."""
    assert (run.status, run.error_type) == (RunStatus.FAILED, error_type), run.error_message
    for fragment in fragments:
        assert fragment in run.error_message, run.error_message
    assert f"{error_type}: " in run.error_traceback
    assert (run.finished_at is not None, run.result) == (True, None)
    assert run.state is not None
    assert {"module", "revision", "layers"} <= set(run.state.data)
    assert NUL not in run.error_message + run.error_traceback + str(run.state.data)


# -- limits ---------------------------------------------------------------------------------


@WITH_AND_WITHOUT_BUBBLEWRAP
def test_ending_cpu_with_sigxcpu_ignored(
    rehearsal: Rehearsal, settings: Any, bubblewrap: bool
) -> None:
    """A child that ignores SIGXCPU is killed at the hard CPU limit: that is the CPU
    limit too, also when bwrap stands between the host and the child."""
    settings.WEFT_SANDBOX_RUNNER = "tests.sandbox_helpers.SigxcpuIgnoringRunner"
    settings.WEFT_SANDBOX_LAYERS = tuple(
        name for name in OPTIONAL_LAYERS if bubblewrap or name != "bubblewrap"
    )
    SigxcpuIgnoringRunner.children.clear()
    run = ended(rehearsal, settings, "def default():\n    while True:\n        pass\n")
    assert_ended(run, "LimitExceeded", "used its 1 s of CPU time", "WEFT_SANDBOX_CPU_SECONDS")
    assert run.state is not None
    assert run.state.data["layers"]["bubblewrap"]["active"] is bubblewrap
    # The SIGKILL of the hard limit, not the SIGXCPU the child ignored (bwrap: 128 + 9).
    child = SigxcpuIgnoringRunner.children[0]
    assert child.process.returncode == (128 + signal.SIGKILL if bubblewrap else -signal.SIGKILL)


@WITH_AND_WITHOUT_BUBBLEWRAP
def test_ending_cpu(rehearsal: Rehearsal, settings: Any, bubblewrap: bool) -> None:
    """A busy loop ends at the CPU limit, with and without bubblewrap."""
    if not bubblewrap:
        settings.WEFT_SANDBOX_LAYERS = tuple(n for n in OPTIONAL_LAYERS if n != "bubblewrap")
    run = ended(rehearsal, settings, "def default():\n    while True:\n        pass\n")
    assert_ended(run, "LimitExceeded", "used its 1 s of CPU time")
    assert run.state is not None
    assert run.state.data["layers"]["bubblewrap"]["active"] is bubblewrap


def test_ending_memory(rehearsal: Rehearsal, settings: Any) -> None:
    """Memory used up a little at a time ends at the memory limit."""
    source = "def default():\n    d = []\n    while True:\n        d.append([0] * 1000)\n"
    assert_ended(ended(rehearsal, settings, source), "LimitExceeded", "ran out of memory")


@pytest.mark.parametrize(
    "bomb",
    [
        "d = []\n    while True:\n        d = [d, d]",
        "d = {}\n    while True:\n        d = {'k': d, 'j': [d] * 64}",
        "s = 'x'\n    while True:\n        s = s + s",
    ],
    ids=["nested-lists", "nested-dicts", "doubling-string"],
)
def test_ending_memory_bombs(rehearsal: Rehearsal, settings: Any, bomb: str) -> None:
    """However the memory runs out, nested deep or in one block, the call ends at the
    memory limit, never as a crash: the memory limit leaves the stack room to grow."""
    source = f"def default():\n    {bomb}\n"
    assert_ended(ended(rehearsal, settings, source), "LimitExceeded", "ran out of memory")


def test_ending_wall_clock(rehearsal: Rehearsal, settings: Any) -> None:
    """A module that waits past the wall clock ends at the wall-clock limit."""
    settings.WEFT_SANDBOX_IMPORTS = [*weft_settings.SANDBOX_IMPORTS, "time"]
    settings.WEFT_SANDBOX_IMPORT_NAMES = {"time": ["sleep"]}
    settings.WEFT_SANDBOX_WALL_SECONDS = 1.0
    run = ended(rehearsal, settings, "import time\n\ndef default():\n    time.sleep(60)\n")
    assert_ended(run, "LimitExceeded", "wall-clock limit of 1 s")


def test_ending_output(rehearsal: Rehearsal, settings: Any) -> None:
    """Printing past the output limit ends at the output limit; what fit is kept."""
    run = ended(rehearsal, settings, "def default():\n    while True:\n        print('x' * 100)\n")
    assert_ended(run, "LimitExceeded", "printed more than 16384 bytes")
    assert run.state is not None
    assert run.state.data["output"].startswith("x" * 100)


# -- answers nested too deep ----------------------------------------------------------------


def test_ending_frame_100000_deep_is_invalid_answer(
    rehearsal: Rehearsal, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame nested 100,000 deep is refused before the host decodes it: InvalidAnswer,
    not the RecursionError the decoder would raise."""
    settings.WEFT_SANDBOX_RUNNER = "tests.sandbox_helpers.RogueRunner"
    monkeypatch.setattr(RogueRunner, "behaviour", "deep")
    run = ended(rehearsal, settings, "def default():\n    return 1\n")
    assert_ended(run, "InvalidAnswer", "100001 deep, over the limit of 128")


def test_ending_answer_one_level_too_deep(rehearsal: Rehearsal, settings: Any) -> None:
    """A real module's answer one level deeper than an answer may nest is InvalidAnswer."""
    run = ended(rehearsal, settings, nested(MAX_DEPTH))
    assert_ended(run, "InvalidAnswer", f"{MAX_DEPTH + 1} deep, over the limit of {MAX_DEPTH}")


def test_ending_answer_as_deep_as_allowed_is_the_result(
    rehearsal: Rehearsal, settings: Any
) -> None:
    """An answer nested as deep as allowed (one level under the frame's limit) is stored."""
    run = ended(rehearsal, settings, nested(MAX_DEPTH - 1))
    assert run.status == RunStatus.DONE, run.error_message
    assert nesting(encode({"type": "answer", "value": run.result})[4:].decode()) == MAX_DEPTH


def test_nesting_is_counted_outside_strings() -> None:
    """Brackets in strings, escaped quotes among them, do not nest; the limit is inclusive."""
    assert nesting('{"a": "[[[\\"[[", "b": [[1], [2, [3]]]}') == 4
    at_limit = '{"type":"answer","value":' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"
    assert decode(at_limit.encode())["type"] == "answer"
    with pytest.raises(FrameTooDeep):
        decode(at_limit.replace("[", "[[", 1).replace("]", "]]", 1).encode())


# -- NUL characters -------------------------------------------------------------------------


def test_ending_nul_in_the_answer_is_invalid_answer(rehearsal: Rehearsal, settings: Any) -> None:
    """An answer holding a NUL cannot be stored: InvalidAnswer naming where; what the
    module printed is kept, its NUL shown as "␀"."""
    source = (
        "def default():\n"
        "    print('half' + chr(0))\n"
        "    return {'rows': [{'name': 'a' + chr(0)}]}\n"
    )
    run = ended(rehearsal, settings, source)
    assert_ended(run, "InvalidAnswer", f"answer.rows[0].name: {NUL_REFUSAL}")
    assert run.state is not None
    assert run.state.data["output"] == f"half{NUL_SHOWN}\n"


def test_ending_nul_in_output_is_shown_as_the_symbol_for_null(
    rehearsal: Rehearsal, settings: Any
) -> None:
    """Output holding a NUL is stored with the NUL shown as "␀"; the answer is the result."""
    run = ended(
        rehearsal, settings, "def default():\n    print('a' + chr(0) + 'b')\n    return 'ok'\n"
    )
    assert (run.status, run.result) == (RunStatus.DONE, "ok")
    assert run.state is not None
    assert run.state.data["output"] == f"a{NUL_SHOWN}b\n"


def test_ending_nul_in_a_failure_is_shown_as_the_symbol_for_null(
    rehearsal: Rehearsal, settings: Any
) -> None:
    """A failure's message holding a NUL is stored with the NUL shown as "␀"."""
    run = ended(
        rehearsal, settings, "def default():\n    raise ValueError('bad' + chr(0) + 'byte')\n"
    )
    assert_ended(run, "ModuleRaised", f"ValueError: bad{NUL_SHOWN}byte (line 2)")


def test_ending_nul_in_the_module_args_is_refused_at_start() -> None:
    """Args for the module holding a NUL are refused when the run starts, naming where."""
    store("def default(*args):\n    return 1\n")
    with pytest.raises(InvalidArgs) as refused:
        start(registry.get("weft.module"), {"module": "tests/escape", "args": ["ok", NUL]})
    assert refused.value.errors == {"args[1]": [NUL_REFUSAL]}
    assert not Run.objects.exists()

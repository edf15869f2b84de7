"""What the sandbox tests share: layer settings, a module runner through a real worker,
host functions, and a runner whose child breaks the protocol on purpose."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from django_weft.jobs.registry import registry
from django_weft.models import Module, ModuleRevision, Run, RunStatus
from django_weft.operations import start
from django_weft.sandbox import containment
from django_weft.sandbox.config import RoomConfig
from django_weft.sandbox.host import host_function
from django_weft.sandbox.process import Child, ModuleCall
from django_weft.sandbox.protocol import OPTIONAL_LAYERS, Limits
from django_weft.sandbox.runner import CHILD_COMMAND, ProcessRunner, child_command, report_layers
from django_weft.testing import Rehearsal

ROGUE_CHILD = Path(__file__).with_name("rogue_child.py")

#: Every optional layer on, then each one switched off in turn.
LAYER_SETS = {
    "all-layers": OPTIONAL_LAYERS,
    **{
        f"without-{name}": tuple(layer for layer in OPTIONAL_LAYERS if layer != name)
        for name in OPTIONAL_LAYERS
    },
}

#: Limits the tests run under: a short CPU limit, a wall clock that waits for it even
#: on a busy machine (so the CPU limit, not the wall clock, stops a busy loop).
TEST_LIMITS = {
    "WEFT_SANDBOX_CPU_SECONDS": 1,
    "WEFT_SANDBOX_WALL_SECONDS": 30.0,
    "WEFT_SANDBOX_MEMORY_BYTES": 256 * 1024 * 1024,
    "WEFT_SANDBOX_MAX_ANSWER_BYTES": 64 * 1024,
    "WEFT_SANDBOX_MAX_OUTPUT_BYTES": 16 * 1024,
}


@pytest.fixture(params=list(LAYER_SETS))
def layers(request: pytest.FixtureRequest, settings: Any) -> tuple[str, ...]:
    """Each test runs with every optional layer, then with each one switched off; a set
    that leaves out a layer containing the module runs under the unsafe setting, which
    is what lets such a run happen at all."""
    chosen = LAYER_SETS[request.param]
    for name, value in TEST_LIMITS.items():
        setattr(settings, name, value)
    settings.WEFT_SANDBOX_LAYERS = chosen
    settings.WEFT_SANDBOX_UNSAFE_UNCONTAINED = bool(containment.left_out(chosen))
    return chosen


@pytest.fixture
def limits(settings: Any) -> None:
    """The test limits with every optional layer on."""
    for name, value in TEST_LIMITS.items():
        setattr(settings, name, value)


#: The two configurations the sandbox supports: each holds every containing layer.
CONTAINED_LAYER_SETS = {
    "landlock": ("network_namespace", "landlock", "seccomp"),
    "bubblewrap-and-landlock": ("network_namespace", "landlock", "seccomp", "bubblewrap"),
}


def run_without_python_layers(
    source: str, layers: tuple[str, ...], args: list[Any] | None = None, *, flag: Any = False
) -> Any:
    """Run ``source``'s ``default(*args)`` as plain Python in a real child with only
    ``layers`` (and the limits) on, and return its answer.

    No RestrictedPython, no guards, no audit hook: the module is what a module whose
    every Python layer fell would be. Each layer asked for must be active (the
    project's machines have them all), so a test cannot pass on a layer that is off.
    ``flag`` is what ``RoomConfig.python_layers`` is set to (a test gives it other
    values to see that only ``False`` turns the Python layers off).
    """
    config = RoomConfig(
        imports=(),
        import_names=(),
        layers=layers,
        required_layers=(),
        limits=Limits(
            cpu_seconds=5, memory_bytes=256 * 1024 * 1024, output_bytes=0, answer_bytes=65536
        ),
        wall_seconds=60.0,
        python_layers=flag,
    )
    command, bubblewrap_report = child_command(config)
    child = Child(command, config, bubblewrap=bubblewrap_report)
    report = report_layers(child.wait_ready(), child.bubblewrap)
    for name in layers:
        if not report[name]["active"]:
            child.kill()
            raise AssertionError(f"the layer {name} is off here: {report[name]['reason']}")
    answer = child.call(
        ModuleCall(module="tests/kernel", source=source, args=args or []), host=lambda name: None
    )
    return answer.value


def python_layers_only() -> override_settings:
    """Settings under which only the Python layers hold (RestrictedPython, the guards, the
    audit hook) with the limits: every optional kernel layer is off, which only the unsafe
    setting lets a run do. Tests that the Python layers hold on their own use this, so a
    change to how that is switched on is made here.
    """
    return override_settings(WEFT_SANDBOX_LAYERS=[], WEFT_SANDBOX_UNSAFE_UNCONTAINED=True)


#: A module that uses what well-behaved modules use; it must go on succeeding.
WELL_BEHAVED_SOURCE = """\
import json
import math
import re
from collections import Counter
from datetime import datetime, timedelta


class Tally:
    def __init__(self, words):
        self.counts = Counter(words)

    def top(self, n):
        return [word for word, _ in self.counts.most_common(n)]


def scaled(factor):
    def scale(value):
        return value * factor
    return scale


def default():
    words = re.findall(r"[a-z]+", "the cat and the hat and the bat")
    day = datetime(2026, 3, 7) + timedelta(days=1)
    double = scaled(2)
    print(f"{len(words)} words")
    return json.loads(json.dumps({
        "top": Tally(words).top(2),
        "day": day.date().isoformat(),
        "root": math.isqrt(double(8)),
        "squares": {n: n * n for n in range(3)},
    }))
"""

#: What :data:`WELL_BEHAVED_SOURCE` answers (JSON turns the int keys into strings).
WELL_BEHAVED_ANSWER = {
    "top": ["the", "and"],
    "day": "2026-03-08",
    "root": 4,
    "squares": {"0": 0, "1": 1, "2": 4},
}


def assert_well_behaved_runs(rehearsal: Rehearsal) -> None:
    """A well-behaved module still runs to its answer in the same worker."""
    assert_done(
        run_module(rehearsal, WELL_BEHAVED_SOURCE, name="tests/well-behaved"), WELL_BEHAVED_ANSWER
    )


def assert_kept_secret(run: Run, secret: str) -> None:
    """``secret`` is in no field of the run, its state document or its output."""
    run.refresh_from_db()
    fields = [repr(getattr(run, field.attname)) for field in Run._meta.concrete_fields]
    if run.state is not None:
        fields.append(repr(run.state.data))
    assert not [field for field in fields if secret in field], fields


def store(source: str, name: str = "tests/escape", grants: list[str] | None = None) -> Module:
    """Write ``source`` as the module ``name`` straight through the ORM, as its next
    revision, approved.

    The save path (:func:`~django_weft.sandbox.modules.save_module`) would refuse a
    source that does not compile; an escape stored past it must be refused again by
    the child, which compiles every source it runs.
    """
    module, _ = Module.objects.update_or_create(
        name=name, defaults={"source": source, "grants": grants or []}
    )
    module.revision += 1
    module.approved = ModuleRevision.objects.create(
        module=module, revision=module.revision, source=source, grants=grants or []
    )
    module.save(update_fields=["revision", "approved"])
    return module


def run_module(
    rehearsal: Rehearsal,
    source: str | None = None,
    *,
    name: str = "tests/escape",
    method: str | None = None,
    args: Any = None,
    grants: list[str] | None = None,
) -> Run:
    """Store ``source`` (unless None), run it through the worker with a second, plain run
    beside it, and return the module's run once both ended. The plain run ending ``done``
    shows the worker went on whatever the module did."""
    if source is not None:
        store(source, name, grants)
    run_args: dict[str, Any] = {"module": name}
    if method is not None:
        run_args["method"] = method
    if args is not None:
        run_args["args"] = args
    run = start(registry.get("weft.module"), run_args)
    beside = start(registry.get("tests.noop"))
    rehearsal.advance(timedelta(0))
    run.refresh_from_db()
    beside.refresh_from_db()
    assert beside.status == RunStatus.DONE, "the worker did not go on after the module's run"
    return run


def run_rogue(
    rehearsal: Rehearsal,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    behaviour: str,
    *,
    grants: list[str] | None = None,
) -> Run:
    """A trivial module's run (as :func:`run_module`) through a child taken over to do
    ``behaviour`` (:class:`RogueRunner`)."""
    settings.WEFT_SANDBOX_RUNNER = "tests.sandbox_helpers.RogueRunner"
    monkeypatch.setattr(RogueRunner, "behaviour", behaviour)
    return run_module(rehearsal, "def default():\n    return 1\n", grants=grants)


def in_child(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) in a fresh ``python -I``, which can import django_weft's
    sandbox modules: an audit hook or a kernel filter set there cannot harm this process."""
    return subprocess.run(
        [sys.executable, "-I", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def assert_done(run: Run, result: Any) -> None:
    """The run ended ``done`` with ``result``; else the assertion shows its error."""
    assert (run.status, run.result) == (RunStatus.DONE, result), run.error_message


def assert_failed(run: Run, error_type: str, *fragments: str) -> None:
    """The run failed with ``error_type`` and a message holding every fragment."""
    assert (run.status, run.error_type) == (RunStatus.FAILED, error_type), (
        run.status,
        run.error_type,
        run.error_message,
    )
    for fragment in fragments:
        assert fragment in run.error_message, run.error_message


@host_function("tests.add")
def add(a: float, b: float) -> float:
    """A host function the tests grant: adds two numbers on the host."""
    return a + b


@host_function("tests.secret")
def secret() -> str:
    """A host function no test module is granted."""
    return "the host's secret"


#: The args of every call of ``tests.record``, in this process.
RECORDED: list[list[Any]] = []


@host_function("tests.record")
def record(*args: Any) -> None:
    """A host function with an effect the tests can see: it notes that it ran."""
    RECORDED.append(list(args))


@host_function("tests.fails")
def fails(reason: str) -> None:
    raise ValueError(reason)


@host_function("tests.not_json")
def not_json() -> object:
    return {1, 2}


class RogueRunner(ProcessRunner):
    """Starts ``tests/rogue_child.py`` instead of the real child: a child that has been
    taken over and says whatever :attr:`behaviour` names."""

    behaviour = "garbage"

    def command(self, config: RoomConfig) -> tuple[list[str], dict[str, Any]]:
        command = [sys.executable, "-I", str(ROGUE_CHILD), self.behaviour]
        return command, {"active": False, "reason": "a rogue child"}


#: Run by the child's Python before the child itself: SIGXCPU ignored (a disposition
#: that survives ``exec``), as a module that got past its guards could do.
IGNORE_SIGXCPU = (
    "import os, signal, sys; signal.signal(signal.SIGXCPU, signal.SIG_IGN); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


class SigxcpuIgnoringRunner(ProcessRunner):
    """Starts the real child (behind bubblewrap when that layer is on) with SIGXCPU
    ignored, so only the CPU limit's hard SIGKILL can stop a busy loop; keeps the
    children it started, for the test to read how they died."""

    children: list[Child] = []

    def command(self, config: RoomConfig) -> tuple[list[str], dict[str, Any]]:
        command, report = super().command(config)
        python = len(command) - len(CHILD_COMMAND) - 1
        assert command[python:] == [sys.executable, *CHILD_COMMAND]
        return [
            *command[:python],
            sys.executable,
            "-I",
            "-c",
            IGNORE_SIGXCPU,
            *CHILD_COMMAND,
        ], report

    def spawn(self, config: RoomConfig) -> Child:
        child = super().spawn(config)
        self.children.append(child)
        return child


# -- the attacker's escapes through helpers of allowed modules ------------------------------
# Each ended ``done`` before the Python layers were rebuilt; each module's ``default(path)``
# is given the path of a secret file.

#: update_wrapper copies the child's own globals (the host function's) into the module's,
#: rebinds the audit hook's allow-list, then lists directories and reads files.
ESCAPE_UPDATE_WRAPPER = """\
import functools
class Events:
    ALLOWED_EVENTS = frozenset({"os.listdir", "os.scandir", "open", "builtins.id", "time.sleep"})
def default(path):
    functools.update_wrapper(default, host, assigned=(), updated=("__globals__",))
    functools.update_wrapper(layers, Events, assigned=("ALLOWED_EVENTS",), updated=())
    return [sorted(os.listdir("/")), os.environ.get("WEFT_TEST_SECRET"), open(path).read()]
"""

#: The same with ``@functools.wraps`` as a decorator.
ESCAPE_WRAPS = """\
import functools
@functools.wraps(host, assigned=(), updated=("__globals__",))
def grab():
    pass
def default(path):
    return open(path).read()
"""

#: ``updated=("__dict__",)`` copies a real module's globals onto an object of the module.
ESCAPE_WRAPS_DICT = """\
import functools
import statistics
class Holder:
    pass
def default(path):
    holder = Holder()
    functools.update_wrapper(default, statistics.mean, assigned=(), updated=("__globals__",))
    functools.wraps(sys, assigned=(), updated=("__dict__",))(holder)
    return holder.modules["os"].environ.get("WEFT_TEST_SECRET")
"""

#: str.format through a super() of a str subclass: the guard saw a super, not a str.
ESCAPE_SUPER_FORMAT = """\
class S(str):
    pass
def default(path):
    return super(S, S("{0.__globals__[os].environ}")).format(host)
"""

#: The guards were bound methods of the room: attrgetter reached it and a helper
#: cleared the record of the refusal the module had caught.
ESCAPE_ERASE_REFUSAL = """\
import functools
import operator
class Blank:
    first = None
def default(path):
    try:
        getattr((), "__class__")
    except BaseException:
        pass
    room = operator.attrgetter("__self__")(getattr)
    functools.update_wrapper(room.refusals, Blank, assigned=("first",), updated=())
    return "erased"
"""

#: A function of an allowed module leads to its module's globals (``sys``).
ESCAPE_ALLOWED_FUNCTION_GLOBALS = """\
import functools
import statistics
def default(path):
    functools.update_wrapper(default, statistics.mean, assigned=(), updated=("__globals__",))
    return sys.modules["os"].environ.get("WEFT_TEST_SECRET")
"""

UPDATE_WRAPPER_REFUSED = (
    "functools.update_wrapper is not allowed: it copies attributes by name, unguarded"
)
WRAPS_REFUSED = "functools.wraps is not allowed: it copies attributes by name, unguarded"

#: Each escape: its source, the modules it needs allowed beyond the defaults, and what
#: its refusal says.
ESCAPES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "update_wrapper": (ESCAPE_UPDATE_WRAPPER, (), UPDATE_WRAPPER_REFUSED),
    "wraps": (ESCAPE_WRAPS, (), WRAPS_REFUSED),
    "wraps-dict": (ESCAPE_WRAPS_DICT, (), UPDATE_WRAPPER_REFUSED),
    "allowed-function-globals": (ESCAPE_ALLOWED_FUNCTION_GLOBALS, (), UPDATE_WRAPPER_REFUSED),
    "super-format": (
        ESCAPE_SUPER_FORMAT,
        (),
        "str.format is not allowed: its format strings read attributes unguarded",
    ),
    "erase-refusal": (
        ESCAPE_ERASE_REFUSAL,
        ("operator",),
        'attribute "__class__" is not allowed: it starts with "_"',
    ),
}

"""Escapes from the sandbox: each must end its run ``failed`` with an error that says what
was refused, while the worker goes on (a plain run beside it still finishes).

Every test runs once with every optional layer on and once with each optional layer
switched off in turn (``layers``): the mandatory layers alone must hold. Each module
runs in a real child process, through a real worker.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from django_weft.conf import weft_settings
from django_weft.jobs.registry import registry
from django_weft.models import RunStatus
from django_weft.operations import start
from django_weft.testing import Rehearsal
from tests.sandbox_helpers import (  # noqa: F401  (layers: a fixture)
    ESCAPES,
    assert_failed,
    layers,
    run_module,
    run_rogue,
    store,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("layers"),
    pytest.mark.slow,
    pytest.mark.once,
]


@pytest.fixture
def sandbox(rehearsal: Rehearsal) -> Rehearsal:
    """A rehearsal whose worker executes the module runs."""
    return rehearsal


# -- imports ---------------------------------------------------------------------------------


def test_escape_import_os(sandbox: Rehearsal) -> None:
    """``import os`` is refused by the import allow-list, naming the module."""
    run = run_module(sandbox, "import os\n\ndef default():\n    return os.getcwd()\n")
    assert_failed(run, "ForbiddenImport", 'import of "os" is not allowed', "allowed: math")


def test_escape_dunder_import(sandbox: Rehearsal) -> None:
    """``__import__('os')`` does not compile: the name starts with "_"."""
    run = run_module(sandbox, "def default():\n    return __import__('os').getcwd()\n")
    assert_failed(run, "ModuleSyntaxError", "Line 2", '"__import__" is an invalid variable name')


def test_escape_import_from_allowed_module(sandbox: Rehearsal) -> None:
    """A module outside the allow-list reached through an allowed one is refused too."""
    run = run_module(sandbox, "import statistics\n\ndef default():\n    return statistics.sys\n")
    assert_failed(run, "ForbiddenAccess", 'statistics.sys is not allowed: it is the module "sys"')


# -- files -----------------------------------------------------------------------------------


def test_escape_open(sandbox: Rehearsal) -> None:
    """``open()`` is withheld: calling it fails naming it, even inside a ``try``."""
    source = (
        "def default():\n"
        "    try:\n"
        "        return open('/etc/passwd').read()\n"
        "    except Exception:\n"
        "        return 'swallowed'\n"
    )
    run = run_module(sandbox, source)
    assert_failed(run, "ForbiddenAccess", "open() is not available in the sandbox")


# -- the network -----------------------------------------------------------------------------


def test_escape_socket_import(sandbox: Rehearsal) -> None:
    """``import socket`` is refused by the allow-list."""
    run = run_module(sandbox, "import socket\n\ndef default():\n    return 1\n")
    assert_failed(run, "ForbiddenImport", 'import of "socket" is not allowed')


def test_escape_socket_to_the_database_port(sandbox: Rehearsal, settings: Any) -> None:
    """Even with ``socket`` wrongly allowed, a connection to the database port is refused
    (by the audit hook: the first event on the way, an import or the socket, is enough)."""
    settings.WEFT_SANDBOX_IMPORTS = [*weft_settings.SANDBOX_IMPORTS, "socket"]
    settings.WEFT_SANDBOX_IMPORT_NAMES = {"socket": ["create_connection"]}
    source = (
        "import socket\n"
        "def default():\n"
        "    socket.create_connection(('127.0.0.1', 5432), timeout=2).close()\n"
        "    return 'connected'\n"
    )
    run = run_module(sandbox, source)
    assert_failed(run, "ForbiddenAccess", "the sandbox refused the audit event")


# -- processes -------------------------------------------------------------------------------


def test_escape_subprocess_import(sandbox: Rehearsal) -> None:
    """``import subprocess`` is refused by the allow-list."""
    run = run_module(sandbox, "import subprocess\n\ndef default():\n    return 1\n")
    assert_failed(run, "ForbiddenImport", 'import of "subprocess" is not allowed')


def test_escape_subprocess_run(sandbox: Rehearsal, settings: Any) -> None:
    """Even with ``subprocess`` wrongly allowed, starting a program is refused (by the
    audit hook, at the first event on the way: the pipes it opens, or the program)."""
    settings.WEFT_SANDBOX_IMPORTS = [*weft_settings.SANDBOX_IMPORTS, "subprocess"]
    settings.WEFT_SANDBOX_IMPORT_NAMES = {"subprocess": ["run"]}
    source = (
        "import subprocess\n"
        "def default():\n"
        "    return subprocess.run(['id'], capture_output=True).stdout.decode()\n"
    )
    run = run_module(sandbox, source)
    assert_failed(run, "ForbiddenAccess", "the sandbox refused the audit event")


def test_escape_fork_bomb(sandbox: Rehearsal) -> None:
    """A fork bomb cannot even import ``os``."""
    run = run_module(sandbox, "import os\n\ndef default():\n    while True:\n        os.fork()\n")
    assert_failed(run, "ForbiddenImport", 'import of "os" is not allowed')


def test_escape_fork_bomb_with_os_allowed(sandbox: Rehearsal, settings: Any) -> None:
    """With ``os`` wrongly allowed, the first fork is refused."""
    settings.WEFT_SANDBOX_IMPORTS = [*weft_settings.SANDBOX_IMPORTS, "os"]
    settings.WEFT_SANDBOX_IMPORT_NAMES = {"os": ["fork"]}
    run = run_module(sandbox, "import os\n\ndef default():\n    while True:\n        os.fork()\n")
    assert_failed(run, "ForbiddenAccess", 'refused the audit event "os.fork"')


# -- walking the object graph ----------------------------------------------------------------


def test_escape_subclasses(sandbox: Rehearsal) -> None:
    """``().__class__.__base__.__subclasses__()`` does not compile."""
    run = run_module(sandbox, "def default():\n    return ().__class__.__base__.__subclasses__()\n")
    assert_failed(run, "ModuleSyntaxError", "Line 2", '"__class__" is an invalid attribute name')


def test_escape_subclasses_through_getattr(sandbox: Rehearsal) -> None:
    """The same walk with attribute names built at run time is refused by the guard."""
    source = (
        "def default():\n"
        "    cls = getattr((), '__cla' + 'ss__')\n"
        "    return getattr(cls, '__subclasses__')()\n"
    )
    run = run_module(sandbox, source)
    assert_failed(run, "ForbiddenAccess", 'attribute "__class__" is not allowed')


def test_escape_runtime_attribute_names(sandbox: Rehearsal) -> None:
    """``getattr``, ``hasattr`` and ``setattr`` refuse names built at run time that start
    with "_", even when the module catches the refusal."""
    source = (
        "class Box:\n"
        "    pass\n"
        "def default():\n"
        "    name = '_' + '_dict__'\n"
        "    try:\n"
        "        setattr(Box(), name, {})\n"
        "    except BaseException:\n"
        "        pass\n"
        "    return hasattr(Box(), name)\n"
    )
    run = run_module(sandbox, source)
    assert_failed(run, "ForbiddenAccess", 'attribute "__dict__" is not allowed')


def test_escape_frame_of_generator(sandbox: Rehearsal) -> None:
    """A generator's frame is refused, whether the name is written out or built."""
    source = (
        "def default():\n    gen = (x for x in [1])\n    return getattr(gen, 'gi_' + 'frame')\n"
    )
    run = run_module(sandbox, source)
    assert_failed(run, "ForbiddenAccess", 'attribute "gi_frame" is not allowed')
    written = run_module(sandbox, "def default():\n    return (x for x in [1]).gi_frame\n")
    assert_failed(written, "ModuleSyntaxError", '"gi_frame" is a restricted name')


def test_escape_frame_of_coroutine(sandbox: Rehearsal) -> None:
    """Coroutines cannot be written, so no coroutine frame can be reached."""
    source = "async def walk():\n    pass\n\ndef default():\n    return walk().cr_frame\n"
    run = run_module(sandbox, source)
    assert_failed(run, "ModuleSyntaxError", "AsyncFunctionDef statements are not allowed")


def test_escape_frame_of_traceback(sandbox: Rehearsal) -> None:
    """An exception's traceback (and so its frames) is refused."""
    source = (
        "def default():\n"
        "    try:\n"
        "        1 / 0\n"
        "    except ZeroDivisionError as error:\n"
        "        return getattr(error, '__trace' + 'back__')\n"
    )
    run = run_module(sandbox, source)
    assert_failed(run, "ForbiddenAccess", 'attribute "__traceback__" is not allowed')


@pytest.mark.parametrize("escape", list(ESCAPES))
def test_escape_through_helpers_of_allowed_modules(
    sandbox: Rehearsal, settings: Any, escape: str
) -> None:
    """The attacker's escapes through ``functools.update_wrapper``/``wraps``, ``super()``
    around ``str.format``, a caught refusal erased, an allowed function's globals: each
    fails naming what was refused (tests/sandbox/test_python_layers.py runs them with the
    Python layers alone, and keeps a secret)."""
    source, imports, says = ESCAPES[escape]
    settings.WEFT_SANDBOX_IMPORTS = [*weft_settings.SANDBOX_IMPORTS, *imports]
    assert_failed(run_module(sandbox, source, args=["/etc/hostname"]), "ForbiddenAccess", says)


# -- code from strings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error_type", "says"),
    [
        ("eval('1 + 1')", "ModuleSyntaxError", "Eval calls are not allowed"),
        ("exec('x = 1')", "ModuleSyntaxError", "Exec calls are not allowed"),
        ("compile('1', 'x', 'eval')", "ForbiddenAccess", "compile() is not available"),
        ("(lambda e: e('1'))(eval)", "ForbiddenAccess", "eval() is not available"),
    ],
    ids=["eval", "exec", "compile", "eval-by-another-name"],
)
def test_escape_eval_exec_compile(
    sandbox: Rehearsal, call: str, error_type: str, says: str
) -> None:
    """eval, exec and compile are refused, at compile time or when called."""
    run = run_module(sandbox, f"def default():\n    return {call}\n")
    assert_failed(run, error_type, says)


# -- format strings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("def default():\n    return '{0.__class__}'.format(1)\n", "str.format is not allowed"),
        (
            "def default():\n    return '{x.__class__}'.format_map({'x': 1})\n",
            "str.format_map is not allowed",
        ),
        (
            "def default():\n    return getattr(str, 'format')('{0.__class__}', 1)\n",
            "str.format is not allowed",
        ),
        (
            "import string\n"
            "def default():\n"
            "    return string.Formatter().format('{0.__class__}', 1)\n",
            "string.Formatter is not allowed",
        ),
    ],
    ids=["str.format", "format_map", "str.format-unbound", "string.Formatter"],
)
def test_escape_format_string_attributes(sandbox: Rehearsal, source: str, says: str) -> None:
    """Format strings, which read attributes without the guard, are refused."""
    assert_failed(run_module(sandbox, source), "ForbiddenAccess", says)


# -- limits ----------------------------------------------------------------------------------


def test_escape_infinite_loop(sandbox: Rehearsal) -> None:
    """A busy loop is killed by the CPU limit."""
    run = run_module(sandbox, "def default():\n    while True:\n        pass\n")
    assert_failed(run, "LimitExceeded", "used its 1 s of CPU time", "WEFT_SANDBOX_CPU_SECONDS")


def test_escape_sleep_past_the_wall_clock(sandbox: Rehearsal, settings: Any) -> None:
    """A module that waits without using CPU is killed by the host's wall clock."""
    settings.WEFT_SANDBOX_IMPORTS = [*weft_settings.SANDBOX_IMPORTS, "time"]
    settings.WEFT_SANDBOX_IMPORT_NAMES = {"time": ["sleep"]}
    settings.WEFT_SANDBOX_WALL_SECONDS = 1.0
    run = run_module(sandbox, "import time\n\ndef default():\n    time.sleep(60)\n")
    assert_failed(run, "LimitExceeded", "wall-clock limit of 1 s", "WEFT_SANDBOX_WALL_SECONDS")


@pytest.mark.parametrize(
    "bomb", ["'x' * (2 ** 34)", "[0] * (10 ** 10)", "list(range(10 ** 9))"], ids=str
)
def test_escape_memory_bomb(sandbox: Rehearsal, bomb: str) -> None:
    """Allocations past the address-space limit end the run naming the memory limit."""
    run = run_module(sandbox, f"def default():\n    data = {bomb}\n    return len(data)\n")
    assert_failed(run, "LimitExceeded", "ran out of memory", "WEFT_SANDBOX_MEMORY_BYTES")


def test_escape_deep_recursion(sandbox: Rehearsal) -> None:
    """Unbounded recursion ends the run naming the recursion limit."""
    run = run_module(
        sandbox, "def down(n):\n    return down(n + 1)\n\ndef default():\n    down(0)\n"
    )
    assert_failed(run, "LimitExceeded", "recursed deeper than")


def test_escape_print_flood(sandbox: Rehearsal) -> None:
    """Printing without end is stopped at the output limit; what was printed is kept."""
    run = run_module(sandbox, "def default():\n    while True:\n        print('x' * 100)\n")
    assert_failed(run, "LimitExceeded", "printed more than 16384 bytes")
    assert run.state is not None
    assert run.state.data["output"].startswith("x" * 100)


def test_escape_huge_answer(sandbox: Rehearsal) -> None:
    """An answer over the answer limit ends the run naming the limit."""
    run = run_module(sandbox, "def default():\n    return 'x' * (1024 * 1024)\n")
    assert_failed(run, "LimitExceeded", "over the limit of 65536", "WEFT_SANDBOX_MAX_ANSWER_BYTES")


# -- the host --------------------------------------------------------------------------------


def test_escape_ungranted_host_function(sandbox: Rehearsal) -> None:
    """A host function the module is not granted is refused by the host itself."""
    run = run_module(
        sandbox, "def default():\n    return host('tests.secret')\n", grants=["tests.add"]
    )
    assert_failed(
        run, "HostCallRefused", '"tests.secret", which it is not granted', "grants: tests.add"
    )


def test_escape_forged_message_from_the_module(sandbox: Rehearsal) -> None:
    """A module that prints a forged answer frame only prints: the pipe is not its to write."""
    source = (
        "import json\n"
        "def default():\n"
        "    body = json.dumps({'type': 'answer', 'value': 'forged'})\n"
        "    print(str(len(body)) + body)\n"
        "    return 'real'\n"
    )
    run = run_module(sandbox, source)
    assert (run.status, run.result) == (RunStatus.DONE, "real")
    assert run.state is not None
    assert "forged" in run.state.data["output"]


@pytest.mark.parametrize(
    ("behaviour", "error_type", "says"),
    [
        ("garbage", "ProtocolViolation", "not JSON"),
        ("oversized", "LimitExceeded", "over the limit of"),
        ("unknown", "ProtocolViolation", 'an unexpected "take_over" message'),
        ("ready_twice", "ProtocolViolation", 'an unexpected "ready" message'),
        ("ungranted", "HostCallRefused", '"tests.secret", which it is not granted'),
        ("nameless_call", "ProtocolViolation", "a host call without a name"),
        ("bad_failure", "ProtocolViolation", "a failure of unknown kind 'victory'"),
        ("exit", "ChildFailed", "exited with code 5 before its answer"),
    ],
)
def test_escape_forged_message_from_a_taken_over_child(
    sandbox: Rehearsal,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    behaviour: str,
    error_type: str,
    says: str,
) -> None:
    """A child whose every guard fell still cannot talk the host into anything: each
    forged or broken message ends the run with what the child did."""
    assert_failed(run_rogue(sandbox, settings, monkeypatch, behaviour), error_type, says)


def test_escape_state_left_for_the_next_call(sandbox: Rehearsal) -> None:
    """What one call leaves behind (module globals, a class attribute, an allowed module
    it tried to change) is gone at the next call: each call gets a fresh process."""
    source = (
        "import json\n"
        "SEEN = []\n"
        "class Counter:\n"
        "    calls = 0\n"
        "def default():\n"
        "    SEEN.append(1)\n"
        "    Counter.calls = Counter.calls + 1\n"
        "    return [len(SEEN), Counter.calls]\n"
    )
    first = run_module(sandbox, source)
    second = run_module(sandbox)
    assert (first.result, second.result) == ([1, 1], [1, 1])
    poison = run_module(sandbox, "import json\ndef default():\n    json.dumps = None\n")
    assert_failed(poison, "ForbiddenAccess", "read-only")
    after = run_module(sandbox, "import json\ndef default():\n    return json.dumps([1])\n")
    assert (after.status, after.result) == (RunStatus.DONE, "[1]")


def test_escape_worker_runs_on_after_every_failure(sandbox: Rehearsal) -> None:
    """After a run of failures, the same worker still runs a module to its answer."""
    for source in ("import os\n", "def default():\n    while True:\n        pass\n"):
        run_module(sandbox, source)
    store("def default():\n    return 'still here'\n", name="tests/ok")
    run = start(registry.get("weft.module"), {"module": "tests/ok"})
    sandbox.advance(timedelta(0))
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.DONE, "still here")

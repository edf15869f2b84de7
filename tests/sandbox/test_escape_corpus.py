"""The escape corpus: what an attacker tries first, run as stored modules through a real
worker, in every layer configuration the docs support.

Each escape must end its run ``failed`` with the error type docs/sandbox.md gives for it,
the secret the test plants (in the worker's environment, in a host file, in Redis) must
appear in no field of the run, its attempts or its state document, and a well-behaved
module must still succeed afterwards in the same worker. The escapes are the ones that
once worked (through ``functools``, ``super()``, ``operator`` and the globals of allowed
modules) and the classic ones (frames, ``__reduce_ex__``, metaclasses, ``type()``,
``ctypes``, ``os.fork``, signals, ``/proc``, the database's and Redis's sockets).

CI runs this file as root and again as an unprivileged user.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from django_weft.conf import WeftSettings
from django_weft.models import Attempt, Run, RunStatus
from django_weft.sandbox.protocol import OPTIONAL_LAYERS
from django_weft.testing import Rehearsal
from tests.sandbox_helpers import TEST_LIMITS, assert_failed, run_module

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.once]

#: The layer configurations docs/sandbox.md supports: every layer, and every layer but
#: bubblewrap (Landlock then hides the host's files).
SUPPORTED_CONFIGURATIONS = {
    "bubblewrap": OPTIONAL_LAYERS,
    "landlock": tuple(name for name in OPTIONAL_LAYERS if name != "bubblewrap"),
}

#: The default modules and ``operator``: what a project adds first, and its helpers were
#: one of the ways out.
IMPORTS = (*WeftSettings.SANDBOX_IMPORTS.default, "operator")

POSTGRES_SOCKET = "/var/run/postgresql/.s.PGSQL.5432"
REDIS_URL = "redis://127.0.0.1:6379/0"

WELL_BEHAVED = """
import json, math

def default(values):
    return json.dumps({"total": math.fsum(values)})
"""


@dataclass(frozen=True)
class Secret:
    """One secret, planted where a module that got out would find it."""

    value: str
    path: Path
    redis_key: str


@pytest.fixture(params=list(SUPPORTED_CONFIGURATIONS))
def configuration(request: pytest.FixtureRequest, settings: Any) -> str:
    for name, value in TEST_LIMITS.items():
        setattr(settings, name, value)
    settings.WEFT_SANDBOX_LAYERS = SUPPORTED_CONFIGURATIONS[request.param]
    settings.WEFT_SANDBOX_IMPORTS = IMPORTS
    return str(request.param)


@pytest.fixture
def secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Secret]:
    value = f"weft-secret-{uuid.uuid4().hex}"
    path = tmp_path / "secret.txt"
    path.write_text(value)
    path.chmod(0o644)
    monkeypatch.setenv("WEFT_CORPUS_SECRET", value)
    client = redis.Redis.from_url(REDIS_URL)
    key = f"weft-corpus:{uuid.uuid4().hex}"
    client.set(key, value, ex=600)
    try:
        yield Secret(value, path, key)
    finally:
        client.delete(key)
        client.close()


@dataclass(frozen=True)
class Escape:
    """An attacker's module, the error type it must end with and words of its message."""

    source: str
    error_type: str
    fragments: tuple[str, ...] = ()


ESCAPES: dict[str, Escape] = {
    # -- the ways out that once worked ----------------------------------------------------
    "update_wrapper copies __globals__": Escape(
        """
import functools

def default(path):
    def probe():
        pass
    functools.update_wrapper(probe, functools.reduce, assigned=("__globals__",), updated=())
    return str(probe)
""",
        "ForbiddenAccess",
        ("functools.update_wrapper",),
    ),
    "functools.wraps copies __dict__": Escape(
        """
import functools

def default(path):
    @functools.wraps(functools.reduce, assigned=(), updated=("__di" + "ct__",))
    def probe():
        pass
    return "wrapped"
""",
        "ForbiddenAccess",
        ("functools.wraps",),
    ),
    "functools.wraps as a decorator": Escape(
        """
import functools

def default(path):
    @functools.wraps(functools.reduce)
    def probe():
        pass
    return "wrapped"
""",
        "ForbiddenAccess",
        ("functools.wraps",),
    ),
    "super() past the format guard": Escape(
        """
class S(str):
    pass

def probe():
    pass

def default(path):
    return super(S, S("{0.__globals__}")).format(probe)
""",
        "ForbiddenAccess",
        ("format",),
    ),
    "super() past the format_map guard": Escape(
        """
class S(str):
    pass

def default(path):
    return super(S, S("{k.__class__}")).format_map({"k": 1})
""",
        "ForbiddenAccess",
        ("format_map",),
    ),
    "erasing a caught refusal through attrgetter": Escape(
        """
import operator

def default(path):
    try:
        getattr(1, "__cl" + "ass__")
    except BaseException:
        pass
    guards = operator.attrgetter("__self__")(getattr)
    operator.methodcaller("__init__")(operator.attrgetter("refusals")(guards))
    return "erased"
""",
        "ForbiddenAccess",
        ('"__class__"',),
    ),
    "operator.methodcaller runs str.format": Escape(
        """
import operator

def probe():
    pass

def default(path):
    return operator.methodcaller("format", probe)("{0.__globals__}")
""",
        "ForbiddenAccess",
        ("operator.methodcaller",),
    ),
    "globals of an allowed module's function": Escape(
        """
import json

def default(path):
    return str(getattr(json.dumps, "__glo" + "bals__")["sys"])
""",
        "ForbiddenAccess",
        ('"__globals__"',),
    ),
    # -- the classic walks ----------------------------------------------------------------
    "subclasses of object": Escape(
        """
def default(path):
    base = getattr(getattr((), "__cl" + "ass__"), "__ba" + "se__")
    return [c for c in getattr(base, "__subcl" + "asses__")()]
""",
        "ForbiddenAccess",
        ('"__class__"',),
    ),
    "format string walk": Escape(
        """
def probe():
    pass

def default(path):
    return "{0.__globals__}".format(probe)
""",
        "ForbiddenAccess",
        ("str.format",),
    ),
    "generator frame": Escape(
        """
def default(path):
    generator = (n for n in range(3))
    return str(getattr(generator, "gi_" + "frame"))
""",
        "ForbiddenAccess",
        ('"gi_frame"',),
    ),
    "generator code": Escape(
        """
def default(path):
    generator = (n for n in range(3))
    return str(getattr(generator, "gi_" + "code"))
""",
        "ForbiddenAccess",
        ('"gi_code"',),
    ),
    "coroutine frame": Escape(
        """
async def probe():
    pass

def default(path):
    return str(probe().cr_frame)
""",
        "ModuleSyntaxError",
        ("AsyncFunctionDef",),
    ),
    "traceback frames": Escape(
        """
def default(path):
    try:
        1 / 0
    except ZeroDivisionError as error:
        return str(getattr(error, "__trace" + "back__"))
""",
        "ForbiddenAccess",
        ('"__traceback__"',),
    ),
    "__reduce_ex__": Escape(
        """
def default(path):
    return str(getattr(1, "__reduce" + "_ex__")(2))
""",
        "ForbiddenAccess",
        ('"__reduce_ex__"',),
    ),
    "a metaclass from type(1)": Escape(
        """
def default(path):
    class Probe(metaclass=type(1)):
        pass
    return "made"
""",
        "ModuleSyntaxError",
        ('The keyword argument "metaclass" is not allowed',),
    ),
    "three-argument type()": Escape(
        """
def default(path):
    return str(type("Probe", (object,), {"x": 1}))
""",
        "ForbiddenAccess",
        ("type() is not available",),
    ),
    "lru_cache's __wrapped__": Escape(
        """
import functools

@functools.lru_cache
def cached():
    return 1

def default(path):
    return str(getattr(cached, "__wrap" + "ped__"))
""",
        "ForbiddenAccess",
        ('"__wrapped__"',),
    ),
    "partial of getattr": Escape(
        """
import functools

def default(path):
    return str(functools.partial(getattr, 1, "__cl" + "ass__")())
""",
        "ForbiddenAccess",
        ('"__class__"',),
    ),
    # -- the host -------------------------------------------------------------------------
    "ctypes": Escape(
        "import ctypes\n\ndef default(path):\n    return ctypes.CDLL(None).getpid()\n",
        "ForbiddenImport",
        ('import of "ctypes" is not allowed',),
    ),
    "os.fork": Escape(
        "import os\n\ndef default(path):\n    return os.fork()\n",
        "ForbiddenImport",
        ('import of "os" is not allowed',),
    ),
    "signals to the worker": Escape(
        "import signal\n\ndef default(path):\n    return signal.SIGKILL\n",
        "ForbiddenImport",
        ('import of "signal" is not allowed',),
    ),
    "/proc/self/environ": Escape(
        "def default(path):\n    return open('/proc/self/environ').read()\n",
        "ForbiddenAccess",
        ("open() is not available",),
    ),
    "/proc of the worker": Escape(
        "def default(path):\n    return open('/proc/' + str(1) + '/environ').read()\n",
        "ForbiddenAccess",
        ("open() is not available",),
    ),
    "a host file": Escape(
        "def default(path):\n    return open(path).read()\n",
        "ForbiddenAccess",
        ("open() is not available",),
    ),
    "PostgreSQL's Unix socket": Escape(
        f"""
import socket

def default(path):
    client = socket.socket(socket.AF_UNIX)
    client.connect({POSTGRES_SOCKET!r})
    return "connected"
""",
        "ForbiddenImport",
        ('import of "socket" is not allowed',),
    ),
    "PostgreSQL and Redis over TCP": Escape(
        """
import socket

def default(path):
    for port in (5432, 6379):
        socket.create_connection(("127.0.0.1", port))
    return "connected"
""",
        "ForbiddenImport",
        ('import of "socket" is not allowed',),
    ),
    "the socket module through an allowed module": Escape(
        """
import statistics

def default(path):
    return str(statistics.sys)
""",
        "ForbiddenAccess",
        ("statistics.sys is not allowed",),
    ),
}


def run_text(run: Run) -> str:
    """Every field of the run, its attempts and its state document, as one text."""
    fields = {
        "args": run.args,
        "result": run.result,
        "error": [run.error_type, run.error_message, run.error_traceback],
        "state": run.state.data if run.state is not None else None,
        "attempts": [
            [attempt.error_type, attempt.error_message, attempt.error_traceback]
            for attempt in Attempt.objects.filter(run=run)
        ],
    }
    return json.dumps(fields, default=str)


@pytest.mark.parametrize("name", list(ESCAPES))
def test_escape_corpus(name: str, configuration: str, secret: Secret, rehearsal: Rehearsal) -> None:
    """The escape fails with its documented error, reveals nothing, and the worker's next
    module still runs."""
    escape = ESCAPES[name]
    run = run_module(rehearsal, escape.source, args=[str(secret.path)])
    assert_failed(run, escape.error_type, *escape.fragments)
    assert secret.value not in run_text(run)

    good = run_module(rehearsal, WELL_BEHAVED, name="tests/well-behaved", args=[[1, 2, 3.5]])
    assert good.status == RunStatus.DONE, (good.error_type, good.error_message)
    assert json.loads(good.result) == {"total": 6.5}


def test_the_corpus_plants_its_secret_where_a_module_would_look(secret: Secret) -> None:
    """The secret is really there, so its absence from the runs means something."""
    assert os.environ["WEFT_CORPUS_SECRET"] == secret.value
    assert secret.path.read_text() == secret.value
    client = redis.Redis.from_url(REDIS_URL)
    try:
        assert client.get(secret.redis_key) == secret.value.encode()
    finally:
        client.close()
    assert Path(POSTGRES_SOCKET).exists(), "the corpus needs PostgreSQL's Unix socket"

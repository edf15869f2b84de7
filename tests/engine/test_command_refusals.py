"""Every refused ``runjobs`` and ``prunejobs`` invocation ends with a one-line message and
a non-zero status, never a traceback, and writes nothing.

Each refusal is tried twice: in a real ``python -m django`` subprocess, as a user types
it (a usage error prints argparse's usage, then its one line, and exits 2; any other
refusal prints one ``CommandError:`` line and exits 1), and through ``call_command()``,
which raises the ``CommandError`` instead. A missing uvicorn is a real failed import:
``sys.modules["uvicorn"] = None`` makes ``import uvicorn`` raise ImportError, as it does
where the ``http`` extra is not installed (the wheel test sees the same in a fresh
virtualenv).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from django_weft.models import Run, WorkerProcess
from tests.processes import ROOT, child_env, dies_with_parent

pytestmark = pytest.mark.django_db
#: The subprocess tests: the child must see the test database's tables committed.
in_a_process = pytest.mark.django_db(transaction=True)

#: Python run before the command line in the subprocess, by name.
PRELUDES = {
    "": "",
    "no-uvicorn": "sys.modules['uvicorn'] = None",
    "no-asgi": "from django.conf import settings; settings.ASGI_APPLICATION = None",
}


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port of 127.0.0.1 something is listening on."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield int(listener.getsockname()[1])


def refused(argv: list[str], prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``manage.py ARGV`` in a subprocess on the test database; what it printed."""
    code = (
        "import sys\n"
        f"{PRELUDES[prelude]}\n"
        "from django.core.management import execute_from_command_line\n"
        "execute_from_command_line(['manage.py', *sys.argv[1:]])\n"
    )
    return subprocess.run(
        dies_with_parent([sys.executable, "-c", code, *argv]),
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_refused(result: subprocess.CompletedProcess[str], status: int, line: str) -> None:
    """The process exited ``status`` and its last line is ``line``; no traceback anywhere."""
    printed = result.stdout + result.stderr
    assert "Traceback" not in printed, printed
    assert result.returncode == status, printed
    assert result.stderr.splitlines()[-1] == line, printed
    if status == 1:  # not a usage error: the message is all there is
        assert result.stderr == line + "\n", printed
    assert WorkerProcess.objects.count() == 0
    assert Run.objects.count() == 0


# --- usage errors: argparse's usage, then one line, status 2 -----------------------------


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        pytest.param(
            ["runjobs", "--concurrency", "0"],
            "manage.py runjobs: error: argument --concurrency/-c: must be at least 1, not 0",
            id="concurrency",
        ),
        pytest.param(
            ["runjobs", "--http", "x"],
            'manage.py runjobs: error: argument --http: "x" is not an address; '
            "use HOST:PORT, e.g. 127.0.0.1:8000",
            id="http-address",
        ),
        pytest.param(
            ["runjobs", "--health-file", "/nonexistent/weft/health"],
            'manage.py runjobs: error: argument --health-file: "/nonexistent/weft/health": '
            "the folder /nonexistent/weft does not exist",
            id="health-file",
        ),
        pytest.param(
            ["runjobs", "--clock", "no.such.Clock"],
            'manage.py runjobs: error: argument --clock: cannot import clock "no.such.Clock": '
            "No module named 'no'",
            id="clock",
        ),
        pytest.param(
            ["prunejobs"],
            "manage.py prunejobs: error: the following arguments are required: --older-than",
            id="prune-no-age",
        ),
        pytest.param(
            ["prunejobs", "--older-than", "soon"],
            'manage.py prunejobs: error: argument --older-than: "soon" is not a duration; '
            "use a number and a unit, e.g. 36h, 7d, 1d12h",
            id="prune-age",
        ),
        pytest.param(
            ["prunejobs", "--older-than", "30d", "--batch-size", "0"],
            "manage.py prunejobs: error: argument --batch-size: must be at least 1, not 0",
            id="prune-batch-size",
        ),
    ],
)
@in_a_process
@pytest.mark.slow
def test_refusal_usage_error_in_a_process(argv: list[str], line: str) -> None:
    """A bad flag value: the usage, then one line naming flag and value, status 2."""
    assert_refused(refused(argv), 2, line)


# --- refusals of valid-looking flags: one CommandError line, status 1 -------------------


@pytest.mark.parametrize(
    ("argv", "prelude", "line"),
    [
        pytest.param(
            ["runjobs", "--job", "no.such.job"],
            "",
            "CommandError: unknown job(s): no.such.job",
            id="job",
        ),
        pytest.param(
            ["runjobs", "--since", "2026-03-07T11:00Z"],
            "",
            "CommandError: --since only goes with --plan",
            id="since-without-plan",
        ),
        pytest.param(
            ["runjobs", "--plan", "1d", "--schedule", "nightly digset"],
            "",
            "CommandError: unknown schedule(s): nightly digset",
            id="plan-schedule",
        ),
        pytest.param(
            ["runjobs", "--http", "127.0.0.1:8000"],
            "no-uvicorn",
            "CommandError: runjobs --http needs uvicorn: pip install 'django-weft[http]'",
            id="http-without-uvicorn",
        ),
        pytest.param(
            ["runjobs", "--http", "127.0.0.1:8000"],
            "no-asgi",
            "CommandError: runjobs --http needs settings.ASGI_APPLICATION, the import string "
            'of the project\'s ASGI application, e.g. "mysite.asgi.application"',
            id="http-without-asgi-application",
        ),
    ],
)
@in_a_process
@pytest.mark.slow
def test_refusal_command_error_in_a_process(argv: list[str], prelude: str, line: str) -> None:
    """A refusal after parsing: exactly one line on stderr, status 1, no worker row."""
    assert_refused(refused(argv, prelude), 1, line)


@in_a_process
@pytest.mark.slow
def test_refusal_http_port_taken_in_a_process(taken_port: int) -> None:
    """An address already listened on is refused before the worker starts."""
    result = refused(["runjobs", "--http", f"127.0.0.1:{taken_port}"])
    assert_refused(
        result,
        1,
        f"CommandError: runjobs --http cannot listen on 127.0.0.1:{taken_port}: "
        "Address already in use",
    )


# --- the same through call_command() ---------------------------------------------------


def command(name: str, *argv: str, **options: object) -> None:
    call_command(name, *argv, stdout=StringIO(), stderr=StringIO(), **options)


def test_refusal_http_without_uvicorn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without uvicorn, --http is a CommandError that says which extra to install."""
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    with pytest.raises(CommandError, match=r"needs uvicorn: pip install 'django-weft\[http\]'"):
        command("runjobs", "--http", "127.0.0.1:8000")
    assert WorkerProcess.objects.count() == 0


@pytest.mark.parametrize("value", [None, ""])
def test_refusal_http_without_asgi_application(value: str | None) -> None:
    """Without ASGI_APPLICATION, --http is a CommandError naming the setting."""
    with (
        override_settings(ASGI_APPLICATION=value),
        pytest.raises(CommandError, match=r"needs settings\.ASGI_APPLICATION"),
    ):
        command("runjobs", "--http", "127.0.0.1:8000")
    assert WorkerProcess.objects.count() == 0


def test_refusal_http_asgi_application_does_not_import() -> None:
    """An ASGI_APPLICATION that does not import is named, with the import error."""
    with (
        override_settings(ASGI_APPLICATION="tests.no_such_asgi.application"),
        pytest.raises(CommandError) as caught,
    ):
        command("runjobs", "--http", "127.0.0.1:8000")
    assert str(caught.value) == (
        'runjobs --http cannot import settings.ASGI_APPLICATION "tests.no_such_asgi.application"'
        ": No module named 'tests.no_such_asgi'"
    )
    assert WorkerProcess.objects.count() == 0


def test_refusal_http_port_taken(taken_port: int) -> None:
    """A taken port is a CommandError naming the address and the reason."""
    with pytest.raises(CommandError) as caught:
        command("runjobs", "--http", f"127.0.0.1:{taken_port}")
    assert str(caught.value) == (
        f"runjobs --http cannot listen on 127.0.0.1:{taken_port}: Address already in use"
    )
    assert WorkerProcess.objects.count() == 0


def test_refusal_http_address_not_of_this_host() -> None:
    """An address no interface has (TEST-NET-1, never assigned) is refused the same way."""
    with pytest.raises(CommandError) as caught:
        command("runjobs", "--http", "192.0.2.1:8000")
    assert str(caught.value) == (
        "runjobs --http cannot listen on 192.0.2.1:8000: Cannot assign requested address"
    )


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        pytest.param(
            "runjobs",
            {"health_file": "/nonexistent/weft/health"},
            '--health-file: "/nonexistent/weft/health": the folder /nonexistent/weft does not '
            "exist",
            id="runjobs-health-file",
        ),
        pytest.param(
            "runjobs",
            {"plan": timedelta(0)},
            "--plan: a preview period must be positive, not 0:00:00",
            id="runjobs-plan-timedelta",
        ),
        pytest.param(
            "prunejobs",
            {"older_than": "30d", "batch_size": 0},
            "--batch-size: must be at least 1, not 0",
            id="prunejobs-batch-size-zero",
        ),
        pytest.param(
            "prunejobs",
            {"older_than": "30d", "batch_size": "many"},
            '--batch-size: "many" is not a whole number',
            id="prunejobs-batch-size-text",
        ),
        pytest.param(
            "prunejobs",
            {"older_than": timedelta(days=30)},
            'Error: argument --older-than: "30 days, 0:00:00" is not a duration; use a number '
            "and a unit, e.g. 36h, 7d, 1d12h",
            id="prunejobs-older-than-timedelta",
        ),
    ],
)
def test_refusal_keyword(name: str, options: dict[str, object], message: str) -> None:
    """call_command() keywords go through the flags' types: a bad one is the CommandError
    the flag gives, naming it, and nothing runs."""
    with pytest.raises(CommandError) as caught:
        command(name, **options)
    assert str(caught.value) == message
    assert WorkerProcess.objects.count() == 0

"""The kernel layers, probed on this kernel and tested for what each stops on its own.

Each layer test starts a real Python process that applies that one layer (as the child
does, from trusted code) and then tries what the layer must stop: the layer alone must
stop it, whatever the other layers do. The project's machines (Linux 6.x, user
namespaces allowed, Landlock ABI 4 or later, libseccomp, bubblewrap) have every layer,
so a layer that does not start here fails its test. A layer that is off must be
reported off with the reason, and a run that requires it must fail saying so.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from django_weft.conf import weft_settings
from django_weft.sandbox import bubblewrap, layers
from django_weft.sandbox.child import standard_library_paths
from tests.sandbox_helpers import assert_failed, limits, run_module  # noqa: F401

DATABASE_PORT = 5432


def in_child(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh ``python -I`` that can import django_weft's sandbox modules."""
    return subprocess.run(
        [sys.executable, "-I", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def test_layer_network_namespace_cuts_the_network() -> None:
    """In the new network namespace the database port, reachable outside, is not."""
    assert listening(DATABASE_PORT), "the test needs PostgreSQL listening on 127.0.0.1:5432"
    result = in_child(
        f"""
        import socket
        from django_weft.sandbox.layers import enter_network_namespace
        print(enter_network_namespace())
        try:
            socket.create_connection(("127.0.0.1", {DATABASE_PORT}), timeout=2)
        except OSError as error:
            print("refused:", error)
        else:
            print("connected")
        """
    )
    assert "new " in result.stdout, result.stderr
    assert "refused:" in result.stdout, result.stdout


def test_layer_landlock_reads_only_the_standard_library() -> None:
    """Under Landlock the standard library reads, any other file does not, and TCP is off."""
    assert layers.landlock_abi() >= 4, "the project's machines have Landlock ABI 4 or later"
    result = in_child(
        f"""
        import socket
        from django_weft.sandbox.layers import apply_landlock
        from django_weft.sandbox.child import standard_library_paths
        print(apply_landlock(standard_library_paths()))
        import os
        open(os.__file__).read(10)
        print("stdlib read")
        for attempt in (lambda: open("/etc/hostname").read(),
                        lambda: open("/tmp/weft-landlock-probe", "w"),
                        lambda: socket.create_connection(("127.0.0.1", {DATABASE_PORT}))):
            try:
                attempt()
            except OSError as error:
                print("refused:", type(error).__name__)
            else:
                print("allowed")
        """
    )
    assert "stdlib read" in result.stdout, result.stderr
    assert result.stdout.count("refused: PermissionError") == 3, result.stdout
    assert "allowed" not in result.stdout


def test_layer_seccomp_stops_processes_programs_and_sockets() -> None:
    """Under the seccomp filter fork, exec and socket fail with EPERM."""
    assert layers.pyseccomp is not None, "pyseccomp comes with the test extra"
    result = in_child(
        """
        import os, socket
        from django_weft.sandbox.layers import apply_seccomp
        print(apply_seccomp())
        for name, attempt in (("fork", os.fork),
                              ("exec", lambda: os.execv("/bin/true", ["true"])),
                              ("socket", socket.socket)):
            try:
                attempt()
            except PermissionError:
                print("refused", name)
            else:
                print("allowed", name)
                os._exit(0)
        """
    )
    assert "system calls denied" in result.stdout, result.stderr
    assert [line for line in result.stdout.splitlines() if line.startswith("refused")] == [
        "refused fork",
        "refused exec",
        "refused socket",
    ]


def test_layer_limits_stop_files_and_descriptors(tmp_path: Path) -> None:
    """Under the limits descriptors run out and no byte reaches a file. (Python ignores
    SIGXFSZ, so the write fails with EFBIG instead of killing the child.)"""
    probe = tmp_path / "probe"
    result = in_child(
        f"""
        import os
        PROBE = {str(probe)!r}
        from django_weft.sandbox.layers import apply_limits
        from django_weft.sandbox.protocol import Limits
        apply_limits(Limits(cpu_seconds=2, memory_bytes=256 << 20, output_bytes=1, answer_bytes=1))
        held = []
        try:
            for _ in range(64):
                held.append(os.dup(0))
        except OSError as error:
            print("descriptors:", error.strerror, flush=True)
        for descriptor in held:
            os.close(descriptor)
        try:
            with open(PROBE, "w") as handle:
                handle.write("x")
                handle.flush()
        except OSError as error:
            print("file:", error.strerror, flush=True)
        else:
            print("wrote", flush=True)
        """
    )
    assert "descriptors: Too many open files" in result.stdout, result.stderr
    assert "file: File too large" in result.stdout, result.stdout
    assert not probe.exists() or probe.read_text() == ""


def test_layer_limits_and_forks() -> None:
    """The process limit stops a fork of an unprivileged child. The kernel exempts root's
    own user from it, even inside a new user namespace, so a child started by root forks
    under the limits alone, and only the seccomp filter stops it."""
    code = """
        import os
        from django_weft.sandbox.layers import apply_limits, apply_seccomp, enter_network_namespace
        from django_weft.sandbox.protocol import Limits
        enter_network_namespace()
        apply_limits(Limits(cpu_seconds=2, memory_bytes=256 << 20, output_bytes=1, answer_bytes=1))
        if WITH_SECCOMP:
            apply_seccomp()
        try:
            pid = os.fork()
        except OSError as error:
            print("refused:", error.strerror)
        else:
            if pid == 0:
                os._exit(0)
            print("forked")
        """
    limits_only = in_child(code.replace("WITH_SECCOMP", "False"))
    with_seccomp = in_child(code.replace("WITH_SECCOMP", "True"))
    expected = "forked" if os.geteuid() == 0 else "refused: Resource temporarily unavailable"
    assert limits_only.stdout.strip() == expected, limits_only.stderr
    assert with_seccomp.stdout.strip() == "refused: Operation not permitted", with_seccomp.stderr


def test_layer_bubblewrap_hides_the_host_files(tmp_path: Path) -> None:
    """Inside bubblewrap the host's other files do not exist (its users, a file just
    written, the tests beside the package); the Python and the package still do."""
    prefix, detail = bubblewrap.probe()
    assert prefix is not None, detail
    written = tmp_path / "host-file"
    written.write_text("the host's")
    repository = Path(__file__).resolve().parent.parent
    code = (
        "import os, django_weft; "
        f"print(os.path.exists('/etc/passwd'), os.path.exists({str(written)!r}), "
        f"os.path.exists({str(repository / 'tests')!r}), os.path.exists(django_weft.__file__))"
    )
    result = subprocess.run(
        [*prefix, sys.executable, "-I", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.stdout.split() == ["False", "False", "False", "True"], result.stderr


def test_standard_library_paths_exist() -> None:
    """The paths Landlock allows hold the standard library's own modules."""
    paths = standard_library_paths()
    assert any(os.path.exists(os.path.join(path, "json", "__init__.py")) for path in paths)


# -- what runs report, and what a setting requires ---------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_layers_report(rehearsal: Any) -> None:
    """A run reports every layer as this kernel allows it: each one active or off with why."""
    run = run_module(rehearsal, "def default():\n    return 1\n")
    assert run.state is not None
    report = run.state.data["layers"]
    assert report["landlock"]["active"] == (layers.landlock_abi() >= 1)
    assert report["seccomp"]["active"] == (layers.pyseccomp is not None)
    assert report["bubblewrap"]["active"] == (bubblewrap.probe()[0] is not None)
    for name, entry in report.items():
        assert entry["active"] or entry["reason"], name


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
@pytest.mark.parametrize("name", ["network_namespace", "landlock", "seccomp", "bubblewrap"])
def test_layers_switched_off_are_reported(rehearsal: Any, settings: Any, name: str) -> None:
    """A layer switched off by WEFT_SANDBOX_LAYERS is reported off, saying so."""
    settings.WEFT_SANDBOX_LAYERS = [
        layer for layer in weft_settings.SANDBOX_LAYERS if layer != name
    ]
    run = run_module(rehearsal, "def default():\n    return 1\n")
    assert run.state is not None
    assert run.state.data["layers"][name] == {
        "active": False,
        "reason": "switched off (WEFT_SANDBOX_LAYERS)",
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_layers_required_but_switched_off(rehearsal: Any, settings: Any) -> None:
    """A required layer that is off fails the run before the module runs, saying which."""
    settings.WEFT_SANDBOX_LAYERS = ["network_namespace", "landlock"]
    settings.WEFT_SANDBOX_REQUIRED_LAYERS = ["seccomp"]
    run = run_module(rehearsal, "def default():\n    return 1\n")
    assert_failed(
        run,
        "LayerUnavailable",
        'the sandbox layer "seccomp" is required (WEFT_SANDBOX_REQUIRED_LAYERS) but is off',
    )
    assert run.state is not None
    assert run.state.data["layers"]["seccomp"]["active"] is False


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_layers_required_but_cannot_start(
    rehearsal: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A required layer that cannot start on this host fails the run with the reason."""
    monkeypatch.setenv("PATH", "/nonexistent")
    bubblewrap.probe.cache_clear()
    try:
        settings.WEFT_SANDBOX_REQUIRED_LAYERS = ["bubblewrap"]
        run = run_module(rehearsal, "def default():\n    return 1\n")
    finally:
        bubblewrap.probe.cache_clear()
    assert_failed(run, "LayerUnavailable", '"bubblewrap" is required', "bwrap is not installed")

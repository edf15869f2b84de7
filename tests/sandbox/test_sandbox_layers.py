"""The layers as this kernel gives them: the seccomp filter's own rules, the limits, the
bubblewrap command, what a run reports, and the runs that fail closed.

What the containing layers stop, together and each alone, is in test_kernel_layers.py
(plain Python in a real child). Here, tests that apply a layer start a real Python
process that applies it (as the child does, from trusted code) and tries what it must
stop. The project's machines (Linux 6.x on x86_64, user namespaces allowed, Landlock
ABI 4 or later, bubblewrap) have every layer, so a layer that does not start here fails
its test. A layer that is off is reported off with the reason, and a run that needs it
fails saying so.
"""

from __future__ import annotations

import errno
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from django_weft.conf import weft_settings
from django_weft.models import RunStatus
from django_weft.sandbox import bubblewrap, layers, seccomp
from django_weft.sandbox.child import standard_library_paths
from tests.sandbox_helpers import assert_failed, in_child, limits, run_module  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.once]


def test_layer_seccomp_denies_every_listed_call() -> None:
    """Under the filter each denied call of this architecture fails with EPERM, whatever
    its args (all -1, so a call that got through would fail harmlessly: EINVAL, EFAULT),
    and the report says how many. (fork and vfork ignore their args: see the fork test;
    vhangup too, and would hang up the test's terminal.)"""
    machine = os.uname().machine
    _, table = seccomp.SYSCALL_NUMBERS[machine]
    numbers = {name: table[name] for name in seccomp.DENIED_SYSCALLS if name in table}
    tried = {
        name: number for name, number in numbers.items() if name not in ("fork", "vfork", "vhangup")
    }
    result = in_child(
        f"""
        import ctypes, json
        from django_weft.sandbox.layers import libc
        from django_weft.sandbox.seccomp import apply_seccomp
        print(apply_seccomp())
        answers = {{}}
        for name, number in {tried!r}.items():
            minus_one = ctypes.c_long(-1)
            returned = libc.syscall(number, *[minus_one] * 6)
            answers[name] = ctypes.get_errno() if returned == -1 else returned
        print(json.dumps(answers))
        """
    )
    report, answers = result.stdout.splitlines()
    assert report == f"{len(numbers)} system calls denied ({machine})", result.stderr
    assert json.loads(answers) == dict.fromkeys(tried, errno.EPERM)


def test_layer_seccomp_kills_a_foreign_architecture() -> None:
    """A system call through the i386 ABI (``int 0x80``) of an x86_64 kernel, whose
    numbers mean other calls, kills the child (SIGSYS); without the filter it runs."""
    assert os.uname().machine == "x86_64", "the project's machines are x86_64"
    code = """
        import ctypes, mmap, os
        from django_weft.sandbox.seccomp import apply_seccomp
        # mov eax, 20 (getpid in the i386 table); int 0x80; ret
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))
        i386_getpid = ctypes.CFUNCTYPE(ctypes.c_int)(
            ctypes.addressof(ctypes.c_char.from_buffer(page))
        )
        if FILTERED:
            apply_seccomp()
        print(i386_getpid() == os.getpid(), flush=True)
        """
    unfiltered = in_child(code.replace("FILTERED", "False"))
    filtered = in_child(code.replace("FILTERED", "True"))
    assert unfiltered.stdout.strip() == "True", unfiltered.stderr
    assert filtered.returncode == -signal.SIGSYS, (filtered.returncode, filtered.stderr)
    assert filtered.stdout == ""


def test_layer_seccomp_denies_the_x32_range() -> None:
    """On x86_64 a call numbered in the x32 range (getpid with bit 30 set) fails with
    EPERM under the filter, whether or not this kernel has the x32 ABI."""
    assert os.uname().machine == "x86_64", "the project's machines are x86_64"
    result = in_child(
        f"""
        import ctypes
        from django_weft.sandbox.layers import libc
        from django_weft.sandbox.seccomp import apply_seccomp
        apply_seccomp()
        print(libc.syscall({seccomp.X32_SYSCALL_BIT | 39}), ctypes.get_errno())
        """
    )
    assert result.stdout.split() == ["-1", str(errno.EPERM)], result.stderr


def test_layer_seccomp_without_a_table_names_the_architecture() -> None:
    """An architecture the filter has no numbers for leaves the layer off, naming it."""
    with pytest.raises(layers.LayerFailed) as raised:
        seccomp.build_filter("riscv64")
    assert str(raised.value) == (
        'seccomp has no system call table for the architecture "riscv64" '
        "(it has tables for x86_64, aarch64)"
    )


def test_layer_seccomp_tables_know_every_denied_call() -> None:
    """Each denied name is a call of at least one architecture, and each table's numbers
    are those of distinct calls (a copy error would deny one call twice)."""
    known = set().union(*(table for _, table in seccomp.SYSCALL_NUMBERS.values()))
    assert set(seccomp.DENIED_SYSCALLS) == known
    for _, table in seccomp.SYSCALL_NUMBERS.values():
        assert len(set(table.values())) == len(table)


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
        from django_weft.sandbox.layers import apply_limits, enter_network_namespace
        from django_weft.sandbox.seccomp import apply_seccomp
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


def test_layer_bubblewrap_gives_private_run_and_temporary_directories() -> None:
    """bwrap mounts empty /tmp, /run (/var/run) and /dev/shm of the child's own before it
    binds the Python installation, which may lie below one of them."""
    prefix = bubblewrap.command_prefix("/usr/bin/bwrap")
    for directory in ("/tmp", "/run", "/dev/shm"):
        mount = prefix.index(directory)
        assert prefix[mount - 1] == "--tmpfs", directory
        assert mount < prefix.index("--ro-bind"), directory
    assert prefix[prefix.index("/var/run") - 2 : prefix.index("/var/run")] == [
        "--symlink",
        "../run",
    ]


def test_standard_library_paths_exist() -> None:
    """The paths Landlock allows hold the standard library's own modules."""
    paths = standard_library_paths()
    assert any(os.path.exists(os.path.join(path, "json", "__init__.py")) for path in paths)


# -- what runs report, and when they fail closed -----------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_layers_report(rehearsal: Any) -> None:
    """A run reports every layer as this kernel allows it: here, every one active."""
    run = run_module(rehearsal, "def default():\n    return 1\n")
    assert run.state is not None
    report = run.state.data["layers"]
    machine = os.uname().machine
    assert report["seccomp"] == {
        "active": True,
        "detail": f"{len(seccomp.denied_numbers(machine, seccomp.DENIED_SYSCALLS)[1])} "
        f"system calls denied ({machine})",
    }
    assert report["landlock"] == {"active": True, "detail": f"ABI {layers.landlock_abi()}"}
    assert report["bubblewrap"]["active"], report["bubblewrap"]
    assert report["network_namespace"]["active"], report["network_namespace"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
@pytest.mark.parametrize("name", ["network_namespace", "landlock", "seccomp", "bubblewrap"])
def test_layers_switched_off_are_reported(rehearsal: Any, settings: Any, name: str) -> None:
    """A layer switched off by WEFT_SANDBOX_LAYERS is reported off, saying so (under the
    unsafe setting, for the layers without which a run would not start)."""
    settings.WEFT_SANDBOX_LAYERS = [
        layer for layer in weft_settings.SANDBOX_LAYERS if layer != name
    ]
    settings.WEFT_SANDBOX_UNSAFE_UNCONTAINED = name in ("network_namespace", "seccomp")
    run = run_module(rehearsal, "def default():\n    return 1\n")
    assert run.state is not None
    assert run.state.data["layers"][name] == {
        "active": False,
        "reason": "switched off (WEFT_SANDBOX_LAYERS)",
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
@pytest.mark.parametrize("name", ["network_namespace", "seccomp"])
def test_layers_containing_layer_off_fails_closed(rehearsal: Any, settings: Any, name: str) -> None:
    """Without a layer that contains the module the run fails before the module runs,
    naming the layer, why it is off, and the setting that would allow it."""
    settings.WEFT_SANDBOX_LAYERS = [
        layer for layer in weft_settings.SANDBOX_LAYERS if layer != name
    ]
    run = run_module(rehearsal, "def default():\n    return 1\n")
    assert_failed(run, "LayerUnavailable")
    assert run.error_message == (
        f'the sandbox cannot contain the module: the layer "{name}" is off (switched off '
        "(WEFT_SANDBOX_LAYERS)); set WEFT_SANDBOX_UNSAFE_UNCONTAINED = True only for code "
        "you trust"
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
@pytest.mark.parametrize("name", ["landlock", "bubblewrap"])
def test_layers_one_file_layer_is_enough(rehearsal: Any, settings: Any, name: str) -> None:
    """Landlock or bubblewrap: either one contains the module's file access alone."""
    settings.WEFT_SANDBOX_LAYERS = [
        layer for layer in weft_settings.SANDBOX_LAYERS if layer != name
    ]
    run = run_module(rehearsal, "def default():\n    return 1\n")
    assert (run.status, run.result) == (RunStatus.DONE, 1), run.error_message


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_layers_no_file_layer_that_starts_fails_closed(
    rehearsal: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With Landlock switched off and bwrap not installed, no layer hides the host's
    files: the run fails naming both and why each is off."""
    settings.WEFT_SANDBOX_LAYERS = ["network_namespace", "seccomp", "bubblewrap"]
    monkeypatch.setenv("PATH", "/nonexistent")
    bubblewrap.probe.cache_clear()
    try:
        run = run_module(rehearsal, "def default():\n    return 1\n")
    finally:
        bubblewrap.probe.cache_clear()
    assert_failed(
        run,
        "LayerUnavailable",
        'the sandbox cannot contain the module: no file layer is on: the layer "landlock" is '
        'off (switched off (WEFT_SANDBOX_LAYERS)) and the layer "bubblewrap" is off (bwrap '
        "is not installed",
        "; set WEFT_SANDBOX_UNSAFE_UNCONTAINED = True only for code you trust",
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_layers_unsafe_uncontained_runs_with_what_starts(rehearsal: Any, settings: Any) -> None:
    """Under WEFT_SANDBOX_UNSAFE_UNCONTAINED a module runs with only the mandatory layers."""
    settings.WEFT_SANDBOX_LAYERS = []
    settings.WEFT_SANDBOX_UNSAFE_UNCONTAINED = True
    run = run_module(rehearsal, "def default():\n    return 1\n")
    assert (run.status, run.result) == (RunStatus.DONE, 1), run.error_message
    assert run.state is not None
    assert not any(
        run.state.data["layers"][name]["active"] for name in weft_settings.SANDBOX_LAYERS
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("limits")
def test_layers_required_but_cannot_start(
    rehearsal: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A required layer that cannot start on this host fails the run with the reason,
    though Landlock alone would contain the module."""
    monkeypatch.setenv("PATH", "/nonexistent")
    bubblewrap.probe.cache_clear()
    try:
        settings.WEFT_SANDBOX_REQUIRED_LAYERS = ["bubblewrap"]
        run = run_module(rehearsal, "def default():\n    return 1\n")
    finally:
        bubblewrap.probe.cache_clear()
    assert_failed(run, "LayerUnavailable", '"bubblewrap" is required', "bwrap is not installed")

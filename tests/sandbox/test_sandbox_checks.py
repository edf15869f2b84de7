"""The system checks of the ``WEFT_SANDBOX_*`` settings, E020 to E032, W030, E040 and
E041, one test per id.

Each id is triggered through ``override_settings`` and read back from ``run_checks()``;
the message must name the setting and the bad value. E030 probes this host with a real
child: it is made to fail for real, on a host without a file layer and on one that
forbids namespaces.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from django.core.checks import Error, Warning
from django.test import override_settings

from django_weft.conf import weft_settings
from django_weft.sandbox import bubblewrap
from django_weft.sandbox.allowlist import MODULE_NAMES
from django_weft.sandbox.protocol import OPTIONAL_LAYERS
from django_weft.sandbox.runner import host_layers
from tests.test_checks import only, weft_messages

pytestmark = pytest.mark.django_db


def assert_only(check_id: str, setting: str, value: Any, *says: str) -> None:
    (message,) = only(check_id)
    assert isinstance(message, Error)
    assert setting in message.msg
    assert repr(value) in message.msg or str(value) in message.msg
    for text in says:
        assert text in message.msg, message.msg


def test_checks_sandbox_defaults() -> None:
    """The sandbox defaults pass every check."""
    assert weft_messages() == []


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("no.such.Runner", "cannot be imported"),
        (
            "django_weft.sandbox.process.Child",
            "not a subclass of django_weft.sandbox.runner.Runner",
        ),
        (5, "must be an import string"),
    ],
)
def test_checks_sandbox_runner_invalid(value: Any, says: str) -> None:
    """E020: a runner that cannot be imported or is not a Runner."""
    with override_settings(WEFT_SANDBOX_RUNNER=value):
        assert_only("django_weft.E020", "WEFT_SANDBOX_RUNNER", value, says)


def test_checks_sandbox_runner_subclass() -> None:
    """E020 passes a Runner subclass of the project's own."""
    with override_settings(WEFT_SANDBOX_RUNNER="tests.sandbox_helpers.RogueRunner"):
        assert weft_messages() == []


@pytest.mark.parametrize("value", ["math", ["math", 3], ["os path"], ["", "json"], None])
def test_checks_sandbox_imports_invalid(value: Any) -> None:
    """E021: the allow-list must be a list of module names."""
    with override_settings(WEFT_SANDBOX_IMPORTS=value):
        assert_only("django_weft.E021", "WEFT_SANDBOX_IMPORTS", value, "list of module names")


@pytest.mark.parametrize("value", ["landlock", ["landlock", "selinux"], ["limits"]])
def test_checks_sandbox_layers_invalid(value: Any) -> None:
    """E022: only optional layers can be listed (mandatory ones are always on)."""
    with override_settings(WEFT_SANDBOX_LAYERS=value):
        assert_only("django_weft.E022", "WEFT_SANDBOX_LAYERS", value, "network_namespace")


@pytest.mark.parametrize("value", ["seccomp", ["seccomp", "selinux"]])
def test_checks_sandbox_required_layers_invalid(value: Any) -> None:
    """E023: required layers must be known layers."""
    with override_settings(WEFT_SANDBOX_REQUIRED_LAYERS=value):
        assert_only("django_weft.E023", "WEFT_SANDBOX_REQUIRED_LAYERS", value, "audit_hook")


def test_checks_sandbox_required_layer_switched_off() -> None:
    """E023: a required layer that WEFT_SANDBOX_LAYERS switches off would fail every run."""
    with override_settings(
        WEFT_SANDBOX_LAYERS=["network_namespace", "landlock", "seccomp"],
        WEFT_SANDBOX_REQUIRED_LAYERS=["bubblewrap", "landlock"],
    ):
        assert_only(
            "django_weft.E023", "WEFT_SANDBOX_REQUIRED_LAYERS", "bubblewrap", "switches off"
        )


def test_checks_sandbox_required_layers_valid() -> None:
    with override_settings(WEFT_SANDBOX_REQUIRED_LAYERS=["limits", "landlock", "seccomp"]):
        assert weft_messages() == []


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "5"])
def test_checks_sandbox_cpu_invalid(value: Any) -> None:
    """E024: the CPU limit is whole seconds, at least one."""
    with override_settings(WEFT_SANDBOX_CPU_SECONDS=value):
        assert_only("django_weft.E024", "WEFT_SANDBOX_CPU_SECONDS", value, "at least 1")


@pytest.mark.parametrize("value", [0, -1.0, True, "10"])
def test_checks_sandbox_wall_invalid(value: Any) -> None:
    """E025: the wall clock is a positive number of seconds."""
    with override_settings(WEFT_SANDBOX_WALL_SECONDS=value):
        assert_only("django_weft.E025", "WEFT_SANDBOX_WALL_SECONDS", value, "positive")


def test_checks_sandbox_wall_below_cpu() -> None:
    """E025: a wall clock shorter than the CPU limit would always fire first."""
    with override_settings(WEFT_SANDBOX_WALL_SECONDS=2.0, WEFT_SANDBOX_CPU_SECONDS=5):
        assert_only("django_weft.E025", "WEFT_SANDBOX_WALL_SECONDS", 2.0, "at least")


@pytest.mark.parametrize(
    ("setting", "check_id", "value"),
    [
        ("WEFT_SANDBOX_MEMORY_BYTES", "django_weft.E026", 1024),
        ("WEFT_SANDBOX_MEMORY_BYTES", "django_weft.E026", "512M"),
        ("WEFT_SANDBOX_MAX_ANSWER_BYTES", "django_weft.E027", 0),
        ("WEFT_SANDBOX_MAX_ANSWER_BYTES", "django_weft.E027", 1.5),
        ("WEFT_SANDBOX_MAX_OUTPUT_BYTES", "django_weft.E028", -1),
        ("WEFT_SANDBOX_MAX_OUTPUT_BYTES", "django_weft.E028", None),
        ("WEFT_SANDBOX_POOL_SIZE", "django_weft.E029", -1),
        ("WEFT_SANDBOX_POOL_SIZE", "django_weft.E029", True),
    ],
)
def test_checks_sandbox_sizes_invalid(setting: str, check_id: str, value: Any) -> None:
    """E026-E029: memory (at least 64 MiB), answer (at least 1), output and pool (at
    least 0) are whole numbers."""
    with override_settings(**{setting: value}):
        assert_only(check_id, setting, value, "whole number")


def test_checks_sandbox_sizes_at_their_least() -> None:
    with override_settings(
        WEFT_SANDBOX_MEMORY_BYTES=64 * 1024 * 1024,
        WEFT_SANDBOX_MAX_ANSWER_BYTES=1,
        WEFT_SANDBOX_MAX_OUTPUT_BYTES=0,
        WEFT_SANDBOX_POOL_SIZE=0,
    ):
        assert weft_messages() == []


# -- containment: E030, E031, E032, W030 ------------------------------------------------------


@pytest.mark.parametrize(
    ("left_out", "named"),
    [
        ("seccomp", '"seccomp"'),
        ("network_namespace", '"network_namespace"'),
        ("landlock bubblewrap", 'both file layers, "landlock" and "bubblewrap"'),
    ],
)
def test_checks_sandbox_containing_layer_left_out(left_out: str, named: str) -> None:
    """E031: WEFT_SANDBOX_LAYERS without a layer that contains the module fails every run."""
    kept = [name for name in OPTIONAL_LAYERS if name not in left_out.split()]
    with override_settings(WEFT_SANDBOX_LAYERS=kept):
        (message,) = only("django_weft.E031")
    assert message.msg == (
        f"WEFT_SANDBOX_LAYERS leaves out {named}, which the sandbox needs to contain a "
        "module: every module's run would fail."
    )
    assert "WEFT_SANDBOX_UNSAFE_UNCONTAINED = True only for code you trust" in message.hint


def test_checks_sandbox_unsafe_uncontained_warns() -> None:
    """W030: the unsafe setting on is a warning saying so, and no layer is then required
    (no E031 for the layers it leaves out, no probe)."""
    with override_settings(WEFT_SANDBOX_UNSAFE_UNCONTAINED=True, WEFT_SANDBOX_LAYERS=[]):
        (message,) = only("django_weft.W030")
    assert isinstance(message, Warning)
    assert message.msg.startswith("WEFT_SANDBOX_UNSAFE_UNCONTAINED is True")
    assert "unsafe for code you do not trust" in message.msg


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_checks_sandbox_unsafe_uncontained_invalid(value: Any) -> None:
    """E032: the unsafe setting is True or False; anything else keeps runs contained."""
    with override_settings(WEFT_SANDBOX_UNSAFE_UNCONTAINED=value):
        assert_only("django_weft.E032", "WEFT_SANDBOX_UNSAFE_UNCONTAINED", value, "True or False")
        assert weft_settings.SANDBOX_UNSAFE_UNCONTAINED is False


def test_checks_sandbox_host_without_a_file_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """E030: the probe starts a real child on this host; with Landlock switched off and
    bwrap not installed no layer hides the host's files, and the check says so, once."""
    layers = ("network_namespace", "seccomp", "bubblewrap")
    monkeypatch.setenv("PATH", "/nonexistent")
    bubblewrap.probe.cache_clear()
    host_layers.cache_clear()
    try:
        with override_settings(WEFT_SANDBOX_LAYERS=layers):
            (message,) = only("django_weft.E030")
            assert host_layers.cache_info().currsize == 1
            only("django_weft.E030")  # asked again: the cached answer, no second child
            assert host_layers.cache_info().hits >= 1
    finally:
        bubblewrap.probe.cache_clear()
        host_layers.cache_clear()
    assert message.msg.startswith(
        "This host cannot contain a stored module: no file layer is on: the layer "
        '"landlock" is off (switched off (WEFT_SANDBOX_LAYERS)) and the layer "bubblewrap" '
        "is off (bwrap is not installed"
    )
    assert (
        'A project that stores no modules can add "django_weft.E030" to '
        "SILENCED_SYSTEM_CHECKS (runs still fail closed)." in message.msg
    )


@pytest.mark.slow
def test_checks_sandbox_host_that_forbids_namespaces() -> None:
    """E030 on a host that forbids namespaces (as container runtimes' seccomp profiles do):
    ``manage.py check`` in a process whose own filter denies unshare names the network
    namespace and the kernel's answer."""
    code = textwrap.dedent(
        """
        import os, django
        from django_weft.sandbox.seccomp import build_filter, load_filter
        load_filter(build_filter(os.uname().machine, denied=("unshare",)))
        django.setup()
        from django.core.checks import run_checks
        for message in run_checks():
            if (message.id or "").startswith("django_weft."):
                print(message.id, message.msg)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
    )
    assert result.stdout.startswith(
        "django_weft.E030 This host cannot contain a stored module: the layer "
        '"network_namespace" is off (unshare(CLONE_NEWNET) failed: Operation not permitted'
    ), (result.stdout, result.stderr)
    assert len(result.stdout.splitlines()) == 1, result.stdout


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (["mylib"], "not ['mylib']"),
        ({"my lib": ["parse"]}, "'my lib' is not a module name"),
        ({"mylib": "parse"}, "must be public identifiers, not 'parse'"),
        ({"mylib": ["_secret"]}, "must be public identifiers, not ['_secret']"),
        ({"mylib": ["no-dash"]}, "must be public identifiers"),
        ({"functools": ["wraps"]}, "functools.wraps cannot be allowed: it copies attributes"),
        ({"operator": ["attrgetter"]}, "operator.attrgetter cannot be allowed: it reads"),
        ({"copy": ["copy"]}, '"copy" cannot be given names: copy.copy and copy.deepcopy'),
    ],
    ids=[
        "not-a-dict",
        "bad-module",
        "names-a-string",
        "private",
        "not-identifier",
        "wraps",
        "attrgetter",
        "copy",
    ],
)
def test_checks_sandbox_import_names_invalid(value: Any, says: str) -> None:
    """E040: a dict of module names to lists of public names, none of the refused helpers."""
    with override_settings(WEFT_SANDBOX_IMPORT_NAMES=value):
        (message,) = only("django_weft.E040")
    assert "WEFT_SANDBOX_IMPORT_NAMES" in message.msg
    assert says in message.msg, message.msg


def test_checks_sandbox_import_names_valid() -> None:
    """E040 passes an allow-list of the project's own and more names for a listed module."""
    with override_settings(
        WEFT_SANDBOX_IMPORTS=["math", "mylib"],
        WEFT_SANDBOX_IMPORT_NAMES={"mylib": ["parse"], "math": ["pi"]},
    ):
        assert weft_messages() == []


@pytest.mark.parametrize(
    ("module", "says"),
    [
        ("mylib", 'the module "mylib" has no attribute allow-list'),
        ("os", 'the module "os" has no attribute allow-list'),
        ("copy", "copy.copy and copy.deepcopy read objects' inner state"),
    ],
)
def test_checks_sandbox_import_without_allow_list(module: str, says: str) -> None:
    """E041: an allowed import with no built-in or configured allow-list cannot be imported."""
    with override_settings(WEFT_SANDBOX_IMPORTS=["math", module]):
        (message,) = only("django_weft.E041")
    assert f'WEFT_SANDBOX_IMPORTS allows "{module}", which cannot be imported' in message.msg
    assert says in message.msg, message.msg


def test_checks_sandbox_project_modules_with_built_in_allow_lists() -> None:
    """E041 passes every module with a built-in allow-list, the optional ones included."""
    with override_settings(WEFT_SANDBOX_IMPORTS=list(MODULE_NAMES)):
        assert weft_messages() == []

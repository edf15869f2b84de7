"""The system checks of the ``WEFT_SANDBOX_*`` settings, E020 to E029, E040 and E041, one
test per id.

Each id is triggered through ``override_settings`` and read back from ``run_checks()``;
the message must name the setting and the bad value.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.checks import Error
from django.test import override_settings

from django_weft.sandbox.allowlist import MODULE_NAMES
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
        WEFT_SANDBOX_LAYERS=["landlock"], WEFT_SANDBOX_REQUIRED_LAYERS=["seccomp", "landlock"]
    ):
        assert_only("django_weft.E023", "WEFT_SANDBOX_REQUIRED_LAYERS", "seccomp", "switches off")


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

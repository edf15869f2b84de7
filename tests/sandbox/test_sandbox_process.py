"""A real ``runjobs`` process runs escaping modules one after another and lives on."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from django_weft.jobs.registry import registry
from django_weft.models import Run, RunStatus
from django_weft.operations import start
from tests.processes import runjobs, wait_for
from tests.sandbox_helpers import store

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.once]

ESCAPES = {
    "tests/import-os": ("import os\ndef default():\n    return os.getcwd()\n", "ForbiddenImport"),
    "tests/loop": ("def default():\n    while True:\n        pass\n", "LimitExceeded"),
    "tests/memory": ("def default():\n    return len('x' * (2 ** 34))\n", "LimitExceeded"),
    "tests/open": ("def default():\n    return open('/etc/passwd').read()\n", "ForbiddenAccess"),
    "tests/recursion": ("def f():\n    return f()\ndef default():\n    f()\n", "LimitExceeded"),
}


def test_runjobs_survives_escaping_modules() -> None:
    """Each escape ends its run failed, and the same runjobs process then runs a module to
    its answer and stops cleanly on SIGTERM."""
    for name, (source, _) in ESCAPES.items():
        store(source, name=name)
    store("def default():\n    return 'alive'\n", name="tests/alive")
    runs = {name: start(registry.get("weft.module"), {"module": name}) for name in ESCAPES}
    process = runjobs("--concurrency", "2")
    try:
        for name, run in runs.items():
            wait_for(
                lambda run=run: Run.objects.get(pk=run.pk).status == RunStatus.FAILED,
                timeout=60,
                what=f"the run of {name} to fail",
            )
        alive = start(registry.get("weft.module"), {"module": "tests/alive"})
        wait_for(
            lambda: Run.objects.get(pk=alive.pk).status == RunStatus.DONE,
            timeout=60,
            what="the last run",
        )
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
    finally:
        output = process.finish()
    assert process.returncode == 0, output
    for name, run in runs.items():
        assert Run.objects.get(pk=run.pk).error_type == ESCAPES[name][1], name
    assert Run.objects.get(pk=alive.pk).result == "alive"


def test_ci_runs_the_sandbox_tests_unprivileged() -> None:
    """Nothing of the sandbox needs root: CI runs these tests, the escape corpus and the
    kernel layers included, once more as a user who is not root, and fails if they fail."""
    root = Path(__file__).resolve().parents[2]
    ci = (root / ".ci" / "run").read_text()
    script = (root / "scripts" / "test_sandbox_unprivileged.sh").read_text()
    assert "bash scripts/test_sandbox_unprivileged.sh" in ci
    assert 'runuser -u "$USER_NAME"' in script
    assert "useradd --system" in script
    assert " tests/sandbox " in script

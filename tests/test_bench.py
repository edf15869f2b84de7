"""``bench/compare.py --tiny``: the side-by-side benchmark runs end to end.

The smallest mode (30 jobs per drain, 20 guest sockets, a few samples) measures every
system on the PostgreSQL and Redis the suite uses, in ``bench/.venv-compare``
(created on first use), and must end with the three ratio lines. Its figures are not
checked: only that every measurement completed and the report was printed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Creating the virtualenv (the first time) and the tiny run, on a busy 2-core machine.
TIMEOUT = 1800

#: Run on its own (``-m bench``, as .ci/run does): it installs the other systems into
#: ``bench/.venv-compare``, which suites side by side in one checkout must not race on.
pytestmark = [pytest.mark.bench, pytest.mark.timeout(TIMEOUT + 60)]

RATIO = r"{name} runs/s: \d+\.\d\d \(1 worker\), \d+\.\d\d \(2 workers\)"


def test_compare_tiny_runs_every_system_and_prints_the_three_ratio_lines() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "compare.py"), "--tiny"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-3:]
    for line, name in zip(
        last, ("weft/best-durable", "weft/celery", "weft-live/weft"), strict=True
    ):
        assert re.fullmatch("ratio " + RATIO.format(name=re.escape(name)), line), last
    for figure in ("Celery, django-celery-results", "start_many()", "guest sockets"):
        assert figure in done.stdout

"""The Python in README.md and docs/*.md compiles, its imports resolve, and README's
first job works whether a schedule fires it or code starts it.

Every fenced block opened with ```` ```python ```` is checked:

- it compiles, as a module; a top-level ``await`` is allowed, as in ``python -m
  asyncio`` (the docs show async calls that way);
- every ``import x.y`` imports, and every ``from x import name`` finds ``name`` in ``x``
  (an attribute, or a submodule), with this suite's settings (django-weft, the example
  project, DRF, Channels installed). Names the block itself defines are not looked up.

A block that is deliberately partial (a settings fragment with ``...`` for the rest) is
marked with ``<!-- fragment -->`` on the line just before its fence, and is then not
checked at all. Keep such marks rare: a block a user copies should run.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest
from django.utils import timezone

from django_weft.jobs import Job, registry
from django_weft.models import Run, RunStatus, Schedule
from django_weft.runs import start
from django_weft.testing import DrivenClock
from django_weft.worker import Worker

ROOT = Path(__file__).resolve().parent.parent
FRAGMENT = "<!-- fragment -->"
_FENCE = re.compile(r"^```python[ \t]*\n(?P<code>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One ```python block: where it is and what it says."""

    path: Path
    line: int  # of the opening fence, 1-based
    code: str
    fragment: bool

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(path, line, match.group("code"), before == FRAGMENT))
    return found


DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [block for path in DOCUMENTS for block in blocks(path)]


def parse(block: Block) -> ast.Module:
    tree = compile(
        block.code,
        block.where,
        "exec",
        flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
        dont_inherit=True,
    )
    assert isinstance(tree, ast.Module)
    return tree


def import_module(name: str, where: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise AssertionError(f"{where}: cannot import {name}: {error}") from None


def check_imports(tree: ast.Module, where: str) -> int:
    """Import what the block imports; AssertionError naming the first that fails."""
    checked = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                import_module(alias.name, where)
                checked += 1
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{where}: a relative import"
            assert node.module
            module = import_module(node.module, where)
            for alias in node.names:
                assert alias.name != "*", f"{where}: import * from {node.module}"
                if not hasattr(module, alias.name):
                    import_module(f"{node.module}.{alias.name}", where)
                checked += 1
    return checked


def test_docs_have_python_blocks() -> None:
    """The extraction finds the blocks (a broken pattern would make every test vacuous)."""
    readme = [block for block in BLOCKS if block.path.name == "README.md"]
    assert len(readme) >= 3
    assert len({block.path for block in BLOCKS}) >= 10
    assert sum(block.fragment for block in BLOCKS) <= 3, "fragment marks are to stay rare"


@pytest.mark.parametrize("block", [b for b in BLOCKS if not b.fragment], ids=lambda b: b.where)
def test_docs_python_block_compiles_and_imports_resolve(block: Block) -> None:
    """The block compiles, and each module and name it imports exists."""
    try:
        tree = parse(block)
    except SyntaxError as error:
        pytest.fail(f"{block.where} does not compile: {error}")
    check_imports(tree, block.where)


def test_docs_check_imports_names_what_is_missing() -> None:
    """The import check fails on a name that a module does not have, naming both."""
    tree = ast.parse("from django_weft.jobs import job, no_such_name\n")
    with pytest.raises(AssertionError, match=r"cannot import django_weft\.jobs\.no_such_name"):
        check_imports(tree, "README.md:1")
    assert check_imports(ast.parse("import json\nfrom django_weft import jobs\n"), "x") == 2


def test_docs_fragment_mark_is_read_from_the_line_before_the_fence(tmp_path: Path) -> None:
    """Only a mark on the line just before a fence makes that block a fragment."""
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- fragment -->\n```python\nINSTALLED_APPS = [...]\n```\n\ntext\n\n"
        "```python\nimport json\n```\n"
    )
    assert [(block.line, block.fragment) for block in blocks(page)] == [(2, True), (8, False)]


# --- README's first job ----------------------------------------------------------------


def readme_block(containing: str) -> str:
    found = [b.code for b in BLOCKS if b.path.name == "README.md" and containing in b.code]
    assert found, f"README.md has no python block with {containing!r}"
    return found[0]


@pytest.fixture
def readme_digest() -> Iterator[Job]:
    """README's first job, defined by running README's own block."""
    namespace: dict[str, object] = {"__name__": "readme_jobs"}
    exec(readme_block("@job("), namespace)
    digest = namespace["digest"]
    assert isinstance(digest, Job)
    yield digest
    registry.unregister(digest.name)


@pytest.mark.django_db(transaction=True)
def test_readme_first_job_fired_by_its_schedule(
    readme_digest: Job, caplog: pytest.LogCaptureFixture
) -> None:
    """README's schedule fires README's job at 07:00 in Toronto: the digest of that day."""
    caplog.set_level("INFO", logger="readme_jobs")
    clock = DrivenClock(datetime(2026, 3, 7, 11, 0, tzinfo=UTC))  # 06:00 in Toronto
    worker = Worker(clock=clock, executor="django_weft.executors.InlineExecutor")
    try:
        exec(readme_block("Schedule.objects.create("), {})
        clock.advance(timedelta(hours=2))
    finally:
        worker.close()
    run = Run.objects.get(schedule=Schedule.objects.get(name="nightly digest"))
    assert run.due == datetime(2026, 3, 7, 12, 0, tzinfo=UTC)
    assert (run.status, run.result) == (RunStatus.DONE, {"day": "2026-03-07"})
    assert [r.getMessage() for r in caplog.records if r.name == "readme_jobs"] == [
        "digest for 2026-03-07"
    ]


@pytest.mark.django_db(transaction=True)
def test_readme_first_job_started_by_code(readme_digest: Job) -> None:
    """Started by a call, README's job has no due and makes the digest of today."""
    before = timezone.now().date()
    run = start(readme_digest)
    worker = Worker(executor="django_weft.executors.InlineExecutor")
    try:
        worker.run(once=True)
    finally:
        worker.close()
    run.refresh_from_db()
    assert run.due is None
    assert run.status == RunStatus.DONE, run.error_message
    days = {day.isoformat() for day in (before, timezone.now().date())}
    assert run.result["day"] in days

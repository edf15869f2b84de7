"""The Python in README.md and docs/*.md compiles, its imports resolve, README's first
job works whether a schedule fires it or code starts it, and a new project set up as the
docs say (install.md, live.md's asgi.py and settings, the tutorial's jobs, schedules and
tests) serves the admin's CSS under ``runjobs --http`` and runs every tutorial job.

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
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest
from django.core.management import call_command
from django.utils import timezone

from django_weft.engine.worker.loop import Worker
from django_weft.jobs.registry import Job, registry
from django_weft.models import Run, RunStatus, Schedule
from django_weft.operations import start
from django_weft.testing import DrivenClock, Rehearsal
from tests.example_server import free_port
from tests.patience import EVENTUALLY
from tests.processes import ChildProcess, dies_with_parent, port_is_open, wait_for

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


_TASKS_IMPORT = re.compile(r"^\s*(?:from|import)\s+(?:django\.tasks|django_weft\.tasks)\b", re.M)
#: Whether Django ships ``django.tasks`` (6.0+). On Django 5.2 (with the backport or
#: without it) the blocks that import it, or django-weft's names built on it, are only
#: compiled; the 6.0 and 6.1 pairs check their imports.
DJANGO_TASKS = importlib.util.find_spec("django.tasks") is not None


def imports_tasks(block: Block) -> bool:
    """Whether ``block`` imports ``django.tasks`` or ``django_weft.tasks``."""
    return _TASKS_IMPORT.search(block.code) is not None


WHOLE_BLOCKS = [block for block in BLOCKS if not block.fragment]


@pytest.mark.parametrize("block", WHOLE_BLOCKS, ids=lambda b: b.where)
def test_docs_python_block_compiles(block: Block) -> None:
    try:
        parse(block)
    except SyntaxError as error:
        pytest.fail(f"{block.where} does not compile: {error}")


@pytest.mark.parametrize(
    "block",
    [block for block in WHOLE_BLOCKS if DJANGO_TASKS or not imports_tasks(block)],
    ids=lambda b: b.where,
)
def test_docs_python_block_imports_resolve(block: Block) -> None:
    """Each module and name the block imports exists."""
    check_imports(parse(block), block.where)


def test_docs_blocks_that_import_tasks_are_told_apart() -> None:
    """The blocks left out of the import check on Django 5.2 are found: the tasks page's
    that import the framework, and not a block that imports only weft's jobs."""
    on_the_page = [block for block in BLOCKS if block.path.name == "django-tasks.md"]
    assert sum(imports_tasks(block) for block in on_the_page) >= 3
    assert not imports_tasks(Block(ROOT, 1, "from django_weft import job\n", False))


def test_docs_check_imports_names_what_is_missing() -> None:
    """The import check fails on a name that a module does not have, naming both."""
    tree = ast.parse("from django_weft.jobs.registry import job, no_such_name\n")
    missing = r"cannot import django_weft\.jobs\.registry\.no_such_name"
    with pytest.raises(AssertionError, match=missing):
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
    with Rehearsal(
        clock, executor="django_weft.engine.worker.executors.InlineExecutor"
    ) as rehearsal:
        exec(readme_block("Schedule.objects.create("), {})
        rehearsal.advance(timedelta(hours=2))
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
    worker = Worker(executor="django_weft.engine.worker.executors.InlineExecutor")
    try:
        worker.run(once=True)
    finally:
        worker.close()
    run.refresh_from_db()
    assert run.due is None
    assert run.status == RunStatus.DONE, run.error_message
    days = {day.isoformat() for day in (before, timezone.now().date())}
    assert run.result["day"] in days


# --- a new project, set up as the docs say ----------------------------------------------


def doc_block(name: str, containing: str, language: str = "python") -> str:
    """The first ``language`` block of docs/``name`` that contains ``containing``."""
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    fence = re.compile(rf"^```{language}[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
    found = [code for code in fence.findall(text) if containing in code]
    assert found, f"docs/{name} has no {language} block with {containing!r}"
    return str(found[0])


def project_env() -> dict[str, str]:
    """This interpreter's environment without the suite's settings, paths or pytest flags."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("DJANGO_", "PYTEST_", "WEFT_")) and name != "PYTHONPATH"
    }
    return env | {"DJANGO_SETTINGS_MODULE": "mysite.settings", "PYTHONUNBUFFERED": "1"}


def in_project(site: Path, *argv: str, stdin: str = "") -> str:
    """Run ``python argv`` in the new project; what it printed (a failure shows it all)."""
    done = subprocess.run(
        [sys.executable, *argv],
        input=stdin,
        cwd=site,
        env=project_env(),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def new_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``startproject mysite`` and ``startapp yourapp``, then what the docs tell a user to
    write: install.md's apps and SQLite options, live.md's asgi.py and settings, and the
    tutorial's jobs (the example's module and the ``publish`` job) in yourapp/jobs.py."""
    site = tmp_path_factory.mktemp("newproject")
    in_project(site, "-m", "django", "startproject", "mysite", str(site))
    in_project(site, "manage.py", "startapp", "yourapp")
    (site / "mysite" / "asgi.py").write_text(doc_block("live.md", "# asgi.py"), encoding="utf-8")
    with (site / "mysite" / "settings.py").open("a", encoding="utf-8") as settings:
        settings.write(
            '\nINSTALLED_APPS += ["rest_framework", "django_weft", "yourapp"]\n'
            'DATABASES["default"]["OPTIONS"] = {"transaction_mode": "IMMEDIATE", "timeout": 20}\n'
        )
        settings.write(doc_block("live.md", "ASGI_APPLICATION"))
    jobs = [
        doc_block("tutorial.md", '@job("content.digest")'),
        doc_block("tutorial.md", '@job("content.publish"'),
    ]
    (site / "yourapp" / "jobs.py").write_text("\n\n".join(jobs), encoding="utf-8")
    in_project(site, "manage.py", "migrate", "--no-input", "-v", "0")
    return site


@pytest.mark.slow
@pytest.mark.any_database
def test_docs_live_asgi_serves_the_admin_css_under_runjobs_http(new_project: Path) -> None:
    """live.md's asgi.py, served by ``runjobs --http`` in a new project (DEBUG, as
    startproject leaves it): the admin's login page gets its stylesheets."""
    port = free_port()
    server = ChildProcess(
        dies_with_parent([sys.executable, "manage.py", "runjobs", "--http", f"127.0.0.1:{port}"]),
        cwd=new_project,
        env=project_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: port_is_open(port) or server.poll() is not None, what="runjobs --http")
        assert server.poll() is None, server.finish()
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{base}/admin/login/", timeout=EVENTUALLY) as response:
            page = response.read().decode()
        sheets = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page)
        assert "/static/admin/css/base.css" in sheets, sheets
        for sheet in sheets:
            with urllib.request.urlopen(f"{base}{sheet}", timeout=EVENTUALLY) as response:
                assert response.status == 200
                assert response.headers["Content-Type"].startswith("text/css"), sheet
                assert response.read(), sheet
    finally:
        server.stop(20)


#: Started in the new project after section 5's block: a run of each tutorial job, and the
#: refused schedule the tutorial quotes; prints what the test asserts on, as JSON.
START_EACH_JOB = """
import json
from datetime import timedelta

from django.core.exceptions import ValidationError

from django_weft.models import Schedule
from django_weft.operations import start
from django_weft.engine.schedules.saving import save_schedule

runs = [
    start("content.publish", {"post_id": "7"}),
    start("content.digest"),
    start("content.cleanup"),
    start("content.remind", {"text": "renew"}),
]
try:
    save_schedule(
        Schedule(name="typo", job="content.publish", args={"post": 7}, every=timedelta(hours=1))
    )
except ValidationError as error:
    refused = error.message_dict
print(json.dumps({
    "runs": [str(run.pk) for run in runs],
    "stored": runs[0].args,
    "refused": refused,
    "schedules": sorted(Schedule.objects.values_list("name", flat=True)),
}))
"""

#: After ``runjobs --once``: how each run ended, and the publish job's document.
OUTCOMES = """
import json

from django_weft.models import Document, Run

runs = Run.objects.filter(pk__in=json.loads(input()))
print(json.dumps({
    "runs": {run.job: [run.status, run.result, run.error_message] for run in runs},
    "posts": Document.objects.get(key="content:posts").data,
}))
"""


@pytest.mark.slow
@pytest.mark.any_database
def test_docs_tutorial_jobs_and_schedules_run_in_a_new_project(new_project: Path) -> None:
    """The tutorial's jobs run as pasted: section 5's schedules save, a start of each job
    (``publish`` included, with its args' defaults) ends ``done`` under ``runjobs --once``,
    and args the job does not know are refused with the tutorial's words."""
    shell = ("manage.py", "shell", "-v", "0", "-c")
    in_project(new_project, *shell, doc_block("tutorial.md", "save_schedule("))
    made = json.loads(in_project(new_project, *shell, START_EACH_JOB))
    assert made["schedules"] == ["publish the launch post", "sitemap", "weekly report"]
    assert made["stored"] == {"post_id": 7, "notify": True}
    assert made["refused"] == {
        "args": [
            "post_id: This field is required.",
            'post: Unknown arg; "content.publish" accepts: notify, post_id.',
        ]
    }
    in_project(new_project, "manage.py", "runjobs", "--once")
    finished = json.loads(in_project(new_project, *shell, OUTCOMES, stdin=json.dumps(made["runs"])))
    assert finished["runs"] == {
        "content.publish": ["done", {"published": 7}, ""],
        "content.digest": ["done", None, ""],
        "content.cleanup": ["done", None, ""],
        "content.remind": ["done", None, ""],
    }
    assert finished["posts"] == {"published": [7], "notified": [7]}


@pytest.mark.slow
@pytest.mark.any_database
def test_docs_tutorial_tests_pass_with_its_pytest_setup(new_project: Path) -> None:
    """Section 7's test module passes in the new project, set up with what the section
    says to install and configure (pytest, pytest-django, its pytest.ini)."""
    assert "pip install pytest pytest-django" in doc_block("tutorial.md", "pytest-django", "sh")
    (new_project / "pytest.ini").write_text(
        doc_block("tutorial.md", "DJANGO_SETTINGS_MODULE", "ini"), encoding="utf-8"
    )
    (new_project / "tests").mkdir(exist_ok=True)
    (new_project / "tests" / "test_schedules.py").write_text(
        doc_block("tutorial.md", "# tests/test_schedules.py"), encoding="utf-8"
    )
    printed = in_project(new_project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
    assert re.search(r"^2 passed", printed, re.MULTILINE), printed


@pytest.mark.django_db
@pytest.mark.parametrize("page", ["tutorial.md", "runjobs.md"])
def test_docs_preview_is_what_runjobs_prints_for_the_demo(page: str) -> None:
    """The first preview of the tutorial (section 6) and of runjobs.md: on a fresh demo
    database, ``runjobs --plan 36h --since ...`` prints the lines the page shows, in that
    order (``...`` stands for the others)."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    shown = re.search(
        r"^```\n\$ python manage.py (runjobs --plan .*?)\n(.*?)^```$", text, re.M | re.S
    )
    assert shown, f"docs/{page} has no preview block"
    call_command("demo", stdout=io.StringIO())
    printed = io.StringIO()
    call_command(*shlex.split(shown.group(1)), stdout=printed)
    lines = printed.getvalue().splitlines()
    position = 0
    for line in shown.group(2).splitlines():
        if line == "...":
            continue
        assert line in lines[position:], f"{line!r} is not printed (after line {position})"
        position = lines.index(line, position) + 1

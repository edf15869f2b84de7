"""The release: what the metadata claims is what CI tests, and the built artifacts work.

The first tests are quick and run with the suite: the classifiers, ``requires-python``
and docs/install.md name exactly the pairs in ``.ci/matrix``, and the version is the
changelog's newest release.

The tests marked ``packaging`` build the sdist and the wheel (or take them from
``WEFT_DIST``, where .ci/run's build step put them) and install them into fresh
virtualenvs, as a user would: the wheel into a new project made with ``django-admin
startproject``, which then runs ``check``, ``migrate``, ``makemigrations --check``,
``runjobs --plan 1d`` and ``runjobs --once`` with README's first job; the sdist, with
its test extra, runs its own tests from the unpacked tree. They take minutes and need
the package registry: ``-m packaging tests/test_packaging.py`` runs them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

import pytest

import django_weft

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
#: The files of the source tree that stay out of the sdist.
NOT_IN_SDIST = {".gitignore"}
#: Files the sdist holds that are made by the build, not tracked.
BUILT_IN_SDIST = {"PKG-INFO", "setup.cfg"}
URLS = {"Homepage", "Documentation", "Repository", "Issues", "Changelog"}


def matrix() -> list[tuple[str, str]]:
    """The (Python, Django) pairs of ``.ci/matrix``, in order."""
    pairs = []
    for line in (ROOT / ".ci" / "matrix").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            python, django = line.split()
            pairs.append((python, django))
    return pairs


def classified(prefix: str) -> set[str]:
    """The versions of the classifiers ``prefix :: X.Y``."""
    found = set()
    for classifier in PROJECT["classifiers"]:
        head, _, version = classifier.rpartition(" :: ")
        if head == prefix and re.fullmatch(r"\d+\.\d+", version):
            found.add(version)
    return found


# --- what the metadata claims --------------------------------------------------------


def test_packaging_classifiers_name_the_tested_pairs() -> None:
    """The Python and Django classifiers are exactly the versions .ci/matrix tests."""
    pairs = matrix()
    assert len(pairs) >= 3
    assert classified("Programming Language :: Python") == {python for python, _ in pairs}
    assert classified("Framework :: Django") == {django for _, django in pairs}


def test_packaging_requirements_admit_the_oldest_tested_pair() -> None:
    """requires-python and the Django requirement start at the oldest tested versions."""
    oldest_python, oldest_django = matrix()[0]
    assert PROJECT["requires-python"] == f">={oldest_python}"
    assert f"Django>={oldest_django}" in PROJECT["dependencies"]


def test_packaging_install_docs_list_the_tested_pairs() -> None:
    """docs/install.md's table of supported versions lists the pairs of .ci/matrix."""
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    section = text.split("## Supported versions", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (3\.\d+) \| (\d+\.\d+)\b", section, re.MULTILINE)
    assert rows == matrix()


def test_packaging_version_is_the_newest_changelog_release() -> None:
    """The version (django_weft.__version__) heads CHANGELOG.md's releases."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert releases, "CHANGELOG.md has no release heading like '## [0.1.0] - 2026-12-01'"
    assert releases[0] == django_weft.__version__
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "django_weft.__version__"
    }


def test_packaging_example_installs_what_its_banner_points_at() -> None:
    """scripts/example.sh installs the ``example`` extra and prints the metrics URL: the
    extra brings the metrics library, so that URL answers with metrics, not a 501."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    (example,) = extras["example"]
    named = set(example.split("[", 1)[1].rstrip("]").split(","))
    assert {"http", "metrics"} <= named
    assert any(name.startswith("prometheus-client") for name in extras["metrics"])
    banner = (ROOT / "scripts" / "example.sh").read_text(encoding="utf-8")
    assert "ensure_venv example" in banner
    assert "/weft/metrics/" in banner


def test_packaging_project_urls() -> None:
    """The metadata links the homepage, the docs, the repository, issues and changelog."""
    urls = PROJECT["urls"]
    assert set(urls) == URLS
    assert all(
        url.startswith("https://github.com/django-weft/django-weft") for url in urls.values()
    )


# --- the built artifacts ---------------------------------------------------------------


@dataclass(frozen=True)
class Artifacts:
    sdist: Path
    wheel: Path


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Artifacts:
    """The sdist and the wheel: from ``WEFT_DIST`` if set, else built here."""
    given = os.environ.get("WEFT_DIST")
    if given:
        folder = Path(given)
    else:
        folder = tmp_path_factory.mktemp("dist")
        run([sys.executable, "-m", "build", "--outdir", str(folder), str(ROOT)])
    version = django_weft.__version__
    sdist = folder / f"django_weft-{version}.tar.gz"
    wheel = folder / f"django_weft-{version}-py3-none-any.whl"
    assert sdist.is_file(), f"no {sdist.name} in {folder}: {sorted(os.listdir(folder))}"
    assert wheel.is_file(), f"no {wheel.name} in {folder}: {sorted(os.listdir(folder))}"
    return Artifacts(sdist, wheel)


def run(
    argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to its end; fail the test with its output unless it exits 0."""
    result = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    if result.returncode != 0:
        pytest.fail(
            f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
        )
    return result


def clean_env(venv: Path) -> dict[str, str]:
    """An environment with nothing of this test run in it: no settings module, no path."""
    return {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


@pytest.fixture
def fresh_venv(tmp_path: Path) -> Iterator[Path]:
    """A new virtualenv of this interpreter's Python, with nothing installed."""
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    yield venv
    shutil.rmtree(venv, ignore_errors=True)


def tracked_files() -> set[str]:
    listed = run(["git", "ls-files", "-z"], cwd=ROOT).stdout
    return {name for name in listed.split("\0") if name}


@pytest.mark.packaging
def test_packaging_sdist_holds_the_whole_source_release(artifacts: Artifacts) -> None:
    """The sdist holds every tracked file (tests, example, docs, changelog, licence, CI
    steps) but .gitignore, and nothing else beyond what the build writes."""
    with tarfile.open(artifacts.sdist) as sdist:
        top = f"django_weft-{django_weft.__version__}/"
        names = {m.name.removeprefix(top) for m in sdist.getmembers() if m.isfile()}
    expected = tracked_files() - NOT_IN_SDIST
    assert sorted(expected - names) == []
    extra = {name for name in names - expected if not name.startswith("django_weft.egg-info/")}
    assert sorted(extra) == sorted(BUILT_IN_SDIST)
    for needed in ("LICENSE", "CHANGELOG.md", "tests/conftest.py", "tests/settings.py"):
        assert needed in names


@pytest.mark.packaging
def test_packaging_wheel_holds_the_package_and_its_licence(artifacts: Artifacts) -> None:
    """The wheel holds django_weft (templates and py.typed too), the licence text and
    the metadata: version, licence expression, project URLs, classifiers."""
    version = django_weft.__version__
    info = f"django_weft-{version}.dist-info"
    with zipfile.ZipFile(artifacts.wheel) as wheel:
        names = set(wheel.namelist())
        licence = wheel.read(f"{info}/licenses/LICENSE").decode()
        metadata = HeaderParser().parsestr(wheel.read(f"{info}/METADATA").decode())
    package = {name for name in tracked_files() if name.startswith("django_weft/")}
    assert sorted(package - names) == []
    assert all(name.startswith(("django_weft/", f"{info}/")) for name in names)
    assert licence == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n")
    assert metadata["Version"] == version
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert metadata["Requires-Python"] == PROJECT["requires-python"]
    assert {url.split(",")[0] for url in metadata.get_all("Project-URL")} == URLS
    assert metadata.get_all("Classifier") == PROJECT["classifiers"]


@pytest.mark.packaging
def test_packaging_classifiers_are_known_to_pypi() -> None:
    """Every classifier is one PyPI accepts (the trove-classifiers list)."""
    # A development dependency (the dev extra), present where the packaging tests run.
    from trove_classifiers import classifiers

    assert sorted(set(PROJECT["classifiers"]) - classifiers) == []


@pytest.mark.packaging
@pytest.mark.timeout(900)  # a fresh project on the built wheel: as the sdist test
def test_packaging_wheel_in_a_new_project(
    artifacts: Artifacts, fresh_venv: Path, tmp_path: Path
) -> None:
    """The wheel alone (no extras) in a project made by startproject: the checks pass,
    the migrations apply and are complete, README's first job is planned by its
    schedule and runs when started from code; --http says which extra it needs."""
    env = clean_env(fresh_venv)
    python = str(fresh_venv / "bin" / "python")
    run([python, "-m", "pip", "install", "--quiet", str(artifacts.wheel)], env=env)
    site = tmp_path / "site"
    site.mkdir()
    run([str(fresh_venv / "bin" / "django-admin"), "startproject", "mysite", str(site)], env=env)
    run([python, "manage.py", "startapp", "yourapp"], cwd=site, env=env)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_job = re.search(r"```python\n(# yourapp/jobs\.py.*?)```", readme, re.DOTALL)
    assert first_job, "README.md's first job (# yourapp/jobs.py) is not found"
    (site / "yourapp" / "jobs.py").write_text(first_job.group(1), encoding="utf-8")
    with (site / "mysite" / "settings.py").open("a", encoding="utf-8") as settings:
        # What README.md and docs/install.md tell a user to add.
        settings.write(
            '\nINSTALLED_APPS += ["rest_framework", "django_weft", "yourapp"]\n'
            'DATABASES["default"]["OPTIONS"] = {"transaction_mode": "IMMEDIATE", "timeout": 20}\n'
        )

    def manage(*argv: str) -> str:
        return run([python, "manage.py", *argv], cwd=site, env=env).stdout

    assert manage("check").strip() == "System check identified no issues (0 silenced)."
    assert "Applying django_weft.0001_initial... OK" in manage("migrate", "--no-input")
    assert manage("makemigrations", "--check", "--dry-run").strip() == "No changes detected"
    schedule = re.search(
        r"```python\n(from django_weft\.models import Schedule\n.*?)```", readme, re.S
    )
    assert schedule, "README.md's schedule block is not found"
    started = manage(
        "shell",
        "-v",
        "0",  # Django 5.2+ says what it imported on its own otherwise
        "-c",
        schedule.group(1)
        + "from django_weft.operations import start\n"
        + "from yourapp.jobs import digest\n"
        + "print(start(digest).pk)\n",
    ).strip()
    plan = manage("runjobs", "--plan", "1d")
    assert re.match(r"# 1 fire over 1 day from ", plan), plan
    assert "nightly digest" in plan
    manage("runjobs", "--once")
    outcome = manage(
        "shell",
        "-v",
        "0",
        "-c",
        "from django_weft.models import Run\n"
        f"run = Run.objects.get(pk='{started}')\n"
        "print(run.status, run.due, run.result['day'])\n",
    ).split()
    assert outcome[:2] == ["done", "None"], outcome
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", outcome[2])

    refused = subprocess.run(
        [python, "manage.py", "runjobs", "--http", "127.0.0.1:8000"],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 1
    assert refused.stderr == (
        "CommandError: runjobs --http needs uvicorn: pip install 'django-weft[http]'\n"
    )


@pytest.mark.packaging
# Installs the sdist and runs four of its test files: minutes on a busy machine, within
# the 900 s each of its commands is given (the suite-wide 300 s is for one test's work).
@pytest.mark.timeout(900)
def test_packaging_sdist_runs_its_own_tests(
    artifacts: Artifacts, fresh_venv: Path, tmp_path: Path
) -> None:
    """Installed with its test extra, the unpacked sdist collects its whole suite and
    passes the tests of its docs, checks, migrations and command refusals."""
    env = clean_env(fresh_venv)
    python = str(fresh_venv / "bin" / "python")
    requirement = f"django-weft[test] @ {artifacts.sdist.as_uri()}"
    run([python, "-m", "pip", "install", "--quiet", requirement], env=env)
    with tarfile.open(artifacts.sdist) as sdist:
        sdist.extractall(tmp_path, filter="data")
    tree = tmp_path / f"django_weft-{django_weft.__version__}"
    pytest_argv = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    collected = run([*pytest_argv, "--collect-only"], cwd=tree, env=env).stdout
    count = re.search(r"^(\d+)(?:/\d+)? tests? collected", collected, re.MULTILINE)
    assert count, collected[-2000:]
    assert int(count.group(1)) > 1000
    passed = run(
        [
            *pytest_argv,
            "tests/test_docs.py",
            "tests/test_checks.py",
            "tests/test_migrations.py",
            "tests/engine/test_command_refusals.py",
        ],
        cwd=tree,
        env=env,
    ).stdout
    assert re.search(r"^\d+ passed", passed.splitlines()[-1]), passed[-2000:]

"""deploy/Dockerfile and deploy/compose.yaml name only what exists.

Docker does not run here, so the files are read instead: every command the services
run is a command of the example project that parses its flags, every variable they set
is one the example's settings read, every path the image copies is in the repository,
every extra it installs is declared, every URL a health check fetches resolves to a
health view; and the example's settings, loaded with the services' environment, are
what the services need (PostgreSQL and Redis by service name, JSON logs, the metrics'
token) and pass Django's system checks.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import get_commands, load_command_class
from django.urls import resolve

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
SETTINGS = ROOT / "example_project" / "settings.py"


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def app_services() -> dict[str, dict[str, Any]]:
    """The services that run the example's image (not PostgreSQL or Redis)."""
    return {name: spec for name, spec in compose()["services"].items() if "build" in spec}


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), continuations joined."""
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0], line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def environment_read_by_settings() -> set[str]:
    """The names example_project/settings.py reads with ``os.environ.get`` or ``[...]``."""
    names = set()
    for node in ast.walk(ast.parse(SETTINGS.read_text())):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.environ.get":
            names.add(ast.literal_eval(node.args[0]))
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
            names.add(ast.literal_eval(node.slice))
    return names


def check_manage_py(argv: list[str]) -> None:
    """``python manage.py <command> <flags>``: the command exists and takes the flags."""
    assert argv[:2] == ["python", "manage.py"], argv
    name, flags = argv[2], argv[3:]
    app = get_commands().get(name)
    assert app is not None, f"no management command {name!r}"
    command = load_command_class(app, name)
    command.create_parser("manage.py", name).parse_args(flags)  # exits on an unknown flag


def check_command(argv: list[str]) -> None:
    if argv[0] == "sh":
        assert argv[1] == "-c"
        for part in argv[2].split("&&"):
            check_command(shlex.split(part))
    elif argv[0] == "uvicorn":
        module, _, attribute = argv[1].partition(":")
        source = ROOT / (module.replace(".", "/") + ".py")
        assigned = {
            target.id
            for node in ast.walk(ast.parse(source.read_text()))
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        assert attribute in assigned, f"{source} assigns no {attribute}"
        assert "--host" in argv
        assert "--port" in argv
    else:
        check_manage_py(argv)


def test_compose_runs_postgres_redis_web_and_two_workers() -> None:
    """The services the example needs: two of them workers, one web process."""
    services = compose()["services"]
    assert {"postgres", "redis", "web", "migrate"} <= set(services)
    workers = [name for name, spec in app_services().items() if spec["command"][2:3] == ["runjobs"]]
    assert len(workers) == 2, workers
    assert app_services()["web"]["command"][0] == "uvicorn"


@pytest.mark.parametrize("service", sorted(app_services()))
def test_compose_service_commands_exist(service: str) -> None:
    """Each command is the example's: its management command and flags, its ASGI app."""
    check_command(app_services()[service]["command"])


def test_compose_sets_only_variables_the_settings_read() -> None:
    """No variable a service sets goes unread (a typo would be silently ignored)."""
    read = environment_read_by_settings() | {"DJANGO_SETTINGS_MODULE"}
    for spec in app_services().values():
        assert set(spec["environment"]) <= read, set(spec["environment"]) - read


@pytest.mark.parametrize("service", sorted(app_services()))
def test_compose_health_checks_fetch_health_views(service: str) -> None:
    """A health check's URL resolves, in the example's URLs, to readiness or liveness,
    on the port its service listens on."""
    spec = app_services()[service]
    if "healthcheck" not in spec:
        assert service == "migrate"  # a one-shot, not a server
        return
    (url,) = re.findall(r"http://127\.0\.0\.1:(\d+)(/[^']*)", " ".join(spec["healthcheck"]["test"]))
    port, path = url
    assert port in " ".join(spec["command"])
    assert resolve(path, urlconf="example_project.urls").url_name in (
        "weft-health-live",
        "weft-health-ready",
    )


def test_dockerfile_copies_what_exists_and_installs_declared_extras() -> None:
    """Every COPY source is in the repository, the extras it installs are declared, and
    its default command is the web service's."""
    instructions = dockerfile()
    for instruction, arguments in instructions:
        if instruction == "COPY":
            *sources, _ = arguments.split()
            for source in sources:
                assert (ROOT / source).exists(), source
    (install,) = [
        arguments
        for instruction, arguments in instructions
        if instruction == "RUN" and "pip install" in arguments
    ]
    extras = re.search(r'"\.\[([^\]]+)\]"', install)
    assert extras is not None, install
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(extras.group(1).split(",")) <= set(declared)
    (cmd,) = [arguments for instruction, arguments in instructions if instruction == "CMD"]
    assert json.loads(cmd) == app_services()["web"]["command"]
    assert compose()["services"]["web"]["build"]["dockerfile"] == "deploy/Dockerfile"


@pytest.mark.slow
def test_example_settings_with_the_compose_environment() -> None:
    """Loaded with a worker's environment, the example's settings point at the services
    by name, log JSON, hold the metrics' token, and pass ``manage.py check``."""
    environment = {
        key: str(value) for key, value in app_services()["worker-1"]["environment"].items()
    }
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **environment}
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.DATABASES['default']['HOST'], "
        "s.CHANNEL_LAYERS['default']['CONFIG']['hosts'], "
        "s.LOGGING['handlers']['console']['formatter'], s.WEFT_METRICS_TOKEN, "
        "s.SILENCED_SYSTEM_CHECKS, s.ALLOWED_HOSTS]))"
    )
    printed = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    assert json.loads(printed) == [
        "postgres",
        ["redis://redis:6379/0"],
        "json",
        "example-metrics-token-change-me",
        ["django_weft.E030"],
        ["127.0.0.1", "localhost", "web"],
    ]
    checked = subprocess.run(
        [sys.executable, "manage.py", "check"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr

"""System checks for every ``WEFT_*`` setting, each with a stable id."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning, register
from django.db import connections
from django.urls import NoReverseMatch, reverse
from django.utils.module_loading import import_string

from django_weft.conf import weft_settings
from django_weft.engine.database.connection_checks import connection_problems
from django_weft.sandbox import containment
from django_weft.sandbox.allowlist import REFUSED_MODULES, allowed_names, no_allow_list, refusal
from django_weft.sandbox.protocol import MANDATORY_LAYERS, OPTIONAL_LAYERS
from django_weft.sandbox.runner import containment_problem


def _import_subclass(setting: str, path: Any, base_path: str, check_id: str) -> list[CheckMessage]:
    base = import_string(base_path)
    if not isinstance(path, str):
        return [Error(f"{setting} must be an import string, not {path!r}.", id=check_id)]
    try:
        cls = import_string(path)
    except ImportError as error:
        return [Error(f"{setting} = {path!r} cannot be imported: {error}.", id=check_id)]
    if not (isinstance(cls, type) and issubclass(cls, base)):
        return [Error(f"{setting} = {path!r} is not a subclass of {base_path}.", id=check_id)]
    return []


@register()
def check_settings(app_configs: Sequence[Any] | None = None, **kwargs: Any) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    messages += _import_subclass(
        "WEFT_CLOCK",
        weft_settings.raw("WEFT_CLOCK"),
        "django_weft.timing.clocks.Clock",
        "django_weft.E001",
    )
    messages += _import_subclass(
        "WEFT_EXECUTOR",
        weft_settings.raw("WEFT_EXECUTOR"),
        "django_weft.engine.worker.executors.Executor",
        "django_weft.E002",
    )
    concurrency = weft_settings.raw("WEFT_CONCURRENCY")
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        messages.append(
            Error(
                f"WEFT_CONCURRENCY must be a positive integer, not {concurrency!r}.",
                id="django_weft.E003",
            )
        )
    for name in ("WEFT_GRACE", "WEFT_CATCH_UP_WINDOW"):
        value = weft_settings.raw(name)
        if not isinstance(value, timedelta) or value < timedelta(0):
            messages.append(
                Error(
                    f"{name} must be a timedelta of zero or more, not {value!r}.",
                    id="django_weft.E004",
                )
            )
    seconds_ok = True
    for name in (
        "WEFT_POLL_INTERVAL",
        "WEFT_SHUTDOWN_GRACE",
        "WEFT_HEARTBEAT_INTERVAL",
        "WEFT_LOST_AFTER",
        "WEFT_ABORT_POLL_INTERVAL",
        "WEFT_TIMEOUT_GRACE",
        "WEFT_LIVE_RECHECK_INTERVAL",
    ):
        value = weft_settings.raw(name)
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            seconds_ok = False
            messages.append(
                Error(
                    f"{name} must be a positive number of seconds, not {value!r}.",
                    id="django_weft.E005",
                )
            )
    if seconds_ok and weft_settings.LOST_AFTER <= 2 * weft_settings.HEARTBEAT_INTERVAL:
        messages.append(
            Error(
                f"WEFT_LOST_AFTER ({weft_settings.LOST_AFTER}s) must be more than twice "
                f"WEFT_HEARTBEAT_INTERVAL ({weft_settings.HEARTBEAT_INTERVAL}s), or live "
                "workers' runs would be finished as lost.",
                id="django_weft.E006",
            )
        )
    executors = weft_settings.raw("WEFT_QUEUE_EXECUTORS")
    if not isinstance(executors, dict) or any(
        not isinstance(queue, str) or value not in ("thread", "process")
        for queue, value in executors.items()
    ):
        messages.append(
            Error(
                'WEFT_QUEUE_EXECUTORS must map queue names to "thread" or "process", not '
                f"{executors!r}.",
                id="django_weft.E060",
            )
        )
    messages += _check_live_settings()
    messages += _check_prune_settings()
    messages += _check_bulk_settings()
    messages += _check_job_modules()
    messages += connection_problems()
    if not settings.USE_TZ:
        messages.append(
            Error(
                "django-weft stores aware UTC moments and needs USE_TZ = True.",
                id="django_weft.E009",
            )
        )
    return messages


def _check_live_settings() -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    for name, least in (
        ("WEFT_LIVE_RECENT_RUNS", 0),
        ("WEFT_LIVE_MAX_FRAME", 1),
        ("WEFT_LIVE_SNAPSHOT_LIMIT", 1),
        ("WEFT_LIVE_MAX_SUBSCRIPTIONS", 1),
    ):
        value = weft_settings.raw(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            messages.append(
                Error(
                    f"{name} must be a whole number of at least {least}, not {value!r}.",
                    id="django_weft.E007",
                )
            )
    path = weft_settings.raw("WEFT_DOCUMENT_ACCESS")
    try:
        policy = import_string(path) if isinstance(path, str) else None
    except ImportError as error:
        messages.append(
            Error(
                f"WEFT_DOCUMENT_ACCESS = {path!r} cannot be imported: {error}.",
                id="django_weft.E008",
            )
        )
    else:
        if not callable(policy):
            messages.append(
                Error(
                    f"WEFT_DOCUMENT_ACCESS = {path!r} is not an import string of a callable "
                    "(user, key) -> bool.",
                    id="django_weft.E008",
                )
            )
    return messages


def _check_prune_settings() -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    for name, optional in (("WEFT_PRUNE_AFTER", True), ("WEFT_PRUNE_INTERVAL", False)):
        value = weft_settings.raw(name)
        if value is None and optional:
            continue
        if not isinstance(value, timedelta) or value <= timedelta(0):
            allowed = "a positive timedelta or None" if optional else "a positive timedelta"
            messages.append(
                Error(f"{name} must be {allowed}, not {value!r}.", id="django_weft.E010")
            )
    size = weft_settings.raw("WEFT_PRUNE_BATCH_SIZE")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        messages.append(
            Error(
                f"WEFT_PRUNE_BATCH_SIZE must be a positive whole number, not {size!r}.",
                id="django_weft.E011",
            )
        )
    return messages


def _check_bulk_settings() -> list[CheckMessage]:
    size = weft_settings.raw("WEFT_BULK_BATCH_SIZE")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        return [
            Error(
                f"WEFT_BULK_BATCH_SIZE must be a positive whole number, not {size!r}.",
                id="django_weft.E080",
            )
        ]
    return []


def module_list_problem(value: Any) -> str:
    """What is wrong with ``WEFT_JOB_MODULES`` as set, or "": a list of dotted names."""
    if isinstance(value, list | tuple) and all(
        isinstance(name, str) and name and all(part.isidentifier() for part in name.split("."))
        for name in value
    ):
        return ""
    return f"WEFT_JOB_MODULES must be a list of dotted module names, not {value!r}."


def _check_job_modules() -> list[CheckMessage]:
    problem = module_list_problem(weft_settings.raw("WEFT_JOB_MODULES"))
    return [Error(problem, id="django_weft.E090")] if problem else []


@register()
def check_api_pages_files(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Swagger UI and Redoc, when the project mounts them, need the sidecar's files."""
    if apps.is_installed("drf_spectacular_sidecar") or not getattr(settings, "ROOT_URLCONF", None):
        return []  # a worker's settings may have no URLs at all
    try:
        reverse("weft-swagger-ui")
    except NoReverseMatch:
        return []  # weft's API pages are not mounted (or under a namespace of the project)
    return [
        Warning(
            "django-weft's Swagger UI and Redoc pages load their scripts and styles from "
            "drf-spectacular-sidecar, which is not in INSTALLED_APPS: they would stay blank.",
            hint='Add "drf_spectacular_sidecar" to INSTALLED_APPS.',
            id="django_weft.W003",
        )
    ]


@register(deploy=False)
def check_sqlite_transactions(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    for alias, database in settings.DATABASES.items():
        if connections[alias].vendor != "sqlite":
            continue
        options: Any = database.get("OPTIONS") or {}
        mode = str(options.get("transaction_mode", "")).upper()
        if mode != "IMMEDIATE":
            messages.append(
                Warning(
                    f'Database "{alias}" is SQLite without "transaction_mode": "IMMEDIATE".',
                    hint="Concurrent starts can then fail with 'database is locked'; add "
                    '"OPTIONS": {"transaction_mode": "IMMEDIATE"} to the database settings.',
                    id="django_weft.W001",
                )
            )
    return messages


# -- the sandbox ------------------------------------------------------------------------------


@register()
def check_sandbox_settings(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    messages = _import_subclass(
        "WEFT_SANDBOX_RUNNER",
        weft_settings.raw("WEFT_SANDBOX_RUNNER"),
        "django_weft.sandbox.runner.Runner",
        "django_weft.E020",
    )
    imports = weft_settings.raw("WEFT_SANDBOX_IMPORTS")
    if not _names(imports) or not all(MODULE_PATH.match(name) for name in imports):
        messages.append(
            Error(
                "WEFT_SANDBOX_IMPORTS must be a list of module names such as "
                f'["math", "json"], not {imports!r}.',
                id="django_weft.E021",
            )
        )
    layers = weft_settings.raw("WEFT_SANDBOX_LAYERS")
    if not _names(layers) or not set(layers) <= set(OPTIONAL_LAYERS):
        messages.append(
            Error(
                f"WEFT_SANDBOX_LAYERS must be a list of optional layers from "
                f"{', '.join(OPTIONAL_LAYERS)}, not {layers!r}.",
                id="django_weft.E022",
            )
        )
    messages += _check_required_layers(layers)
    messages += _check_sandbox_numbers()
    messages += _check_import_names(imports)
    return messages


def _check_import_names(imports: Any) -> list[CheckMessage]:
    """E040: the allow-lists a project adds are sound; E041: every allowed import has one."""
    configured = weft_settings.raw("WEFT_SANDBOX_IMPORT_NAMES")
    problems = _import_names_problems(configured)
    messages: list[CheckMessage] = [
        Error(
            f"WEFT_SANDBOX_IMPORT_NAMES must map module names to lists of public names "
            f'such as {{"mylib": ["parse"]}}: {problem}.',
            id="django_weft.E040",
        )
        for problem in problems
    ]
    if problems or not _names(imports) or not all(MODULE_PATH.match(name) for name in imports):
        return messages  # E040 or E021 already says what is wrong
    for module in imports:
        if allowed_names(module, configured) is None:
            messages.append(
                Error(
                    f'WEFT_SANDBOX_IMPORTS allows "{module}", which cannot be imported: '
                    f"{no_allow_list(module)}.",
                    id="django_weft.E041",
                )
            )
    return messages


def _import_names_problems(configured: Any) -> list[str]:
    if not isinstance(configured, dict):
        return [f"not {configured!r}"]
    problems = []
    for module, names in configured.items():
        if not isinstance(module, str) or not MODULE_PATH.match(module):
            problems.append(f"{module!r} is not a module name")
        elif module in REFUSED_MODULES:
            problems.append(f'"{module}" cannot be given names: {REFUSED_MODULES[module]}')
        elif not _names(names) or not all(_public(name) for name in names):
            problems.append(f'the names of "{module}" must be public identifiers, not {names!r}')
        else:
            problems += [
                f"{module}.{name} cannot be allowed: {refusal(module, name)}"
                for name in names
                if refusal(module, name) is not None
            ]
    return problems


def _public(name: str) -> bool:
    return name.isidentifier() and not name.startswith("_")


MODULE_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _names(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)


def _check_required_layers(layers: Any) -> list[CheckMessage]:
    required = weft_settings.raw("WEFT_SANDBOX_REQUIRED_LAYERS")
    known = (*MANDATORY_LAYERS, *OPTIONAL_LAYERS)
    if not _names(required) or not set(required) <= set(known):
        return [
            Error(
                f"WEFT_SANDBOX_REQUIRED_LAYERS must be a list of layers from {', '.join(known)}, "
                f"not {required!r}.",
                id="django_weft.E023",
            )
        ]
    switched_off = [
        name
        for name in required
        if name in OPTIONAL_LAYERS and _names(layers) and name not in layers
    ]
    return [
        Error(
            f'WEFT_SANDBOX_REQUIRED_LAYERS requires "{name}", which WEFT_SANDBOX_LAYERS '
            "switches off: every module's run would fail.",
            id="django_weft.E023",
        )
        for name in switched_off
    ]


def _check_sandbox_numbers() -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    cpu = weft_settings.raw("WEFT_SANDBOX_CPU_SECONDS")
    cpu_ok = _whole(cpu, 1)
    if not cpu_ok:
        messages.append(
            Error(
                f"WEFT_SANDBOX_CPU_SECONDS must be a whole number of seconds of at least 1, "
                f"not {cpu!r}.",
                id="django_weft.E024",
            )
        )
    wall = weft_settings.raw("WEFT_SANDBOX_WALL_SECONDS")
    if not isinstance(wall, int | float) or isinstance(wall, bool) or wall <= 0:
        messages.append(
            Error(
                f"WEFT_SANDBOX_WALL_SECONDS must be a positive number of seconds, not {wall!r}.",
                id="django_weft.E025",
            )
        )
    elif cpu_ok and wall < cpu:
        messages.append(
            Error(
                f"WEFT_SANDBOX_WALL_SECONDS ({wall}) must be at least WEFT_SANDBOX_CPU_SECONDS "
                f"({cpu}), or the CPU limit could never be reached.",
                id="django_weft.E025",
            )
        )
    for name, least, check_id in (
        ("WEFT_SANDBOX_MEMORY_BYTES", MEMORY_FLOOR, "django_weft.E026"),
        ("WEFT_SANDBOX_MAX_ANSWER_BYTES", 1, "django_weft.E027"),
        ("WEFT_SANDBOX_MAX_OUTPUT_BYTES", 0, "django_weft.E028"),
        ("WEFT_SANDBOX_POOL_SIZE", 0, "django_weft.E029"),
    ):
        value = weft_settings.raw(name)
        if not _whole(value, least):
            messages.append(
                Error(
                    f"{name} must be a whole number of at least {least}, not {value!r}.",
                    id=check_id,
                )
            )
    return messages


#: Address space below which the child's interpreter cannot even start its call.
MEMORY_FLOOR = 64 * 1024 * 1024


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


@register()
def check_sandbox_containment(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Whether modules would run contained here: by the settings, then on this host.

    The host is probed once per process (one child started, its report read, killed),
    and only when the settings leave nothing else to say: no invalid layer names, no
    containing layer switched off, and the unsafe setting off.
    """
    unsafe = weft_settings.raw("WEFT_SANDBOX_UNSAFE_UNCONTAINED")
    if not isinstance(unsafe, bool):
        return [
            Error(
                f"WEFT_SANDBOX_UNSAFE_UNCONTAINED must be True or False, not {unsafe!r}.",
                id="django_weft.E032",
            )
        ]
    if unsafe:
        return [
            Warning(
                "WEFT_SANDBOX_UNSAFE_UNCONTAINED is True: stored modules run with only the "
                "sandbox layers that start on this host, even where nothing but the Python "
                "layers stands between them and the host. That is unsafe for code you do "
                "not trust.",
                hint="Set it to False wherever modules come from someone you do not trust.",
                id="django_weft.W030",
            )
        ]
    layers = weft_settings.raw("WEFT_SANDBOX_LAYERS")
    if not _names(layers) or not set(layers) <= set(OPTIONAL_LAYERS):
        return []  # E022 says what is wrong with it
    left_out = containment.left_out(layers)
    if left_out:
        return [
            Error(
                f"WEFT_SANDBOX_LAYERS leaves out {name}, which the sandbox needs to contain "
                "a module: every module's run would fail.",
                hint=f"Put it back, or {containment.UNSAFE_HINT}.",
                id="django_weft.E031",
            )
            for name in left_out
        ]
    problem = containment_problem(tuple(layers))
    if problem is None:
        return []
    return [
        Error(
            f"This host cannot contain a stored module: {problem}. Every module's run "
            "fails (LayerUnavailable). A project that stores no modules can add "
            '"django_weft.E030" to SILENCED_SYSTEM_CHECKS (runs still fail closed).',
            hint=f"Give the host the layer (docs/sandbox.md), or {containment.UNSAFE_HINT}.",
            id="django_weft.E030",
        )
    ]


# -- the API ----------------------------------------------------------------------------------


@register()
def check_api_settings(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    public = weft_settings.raw("WEFT_API_DOCS_PUBLIC")
    if isinstance(public, bool):
        return []
    return [
        Error(
            f"WEFT_API_DOCS_PUBLIC must be True or False, not {public!r}.",
            id="django_weft.E012",
        )
    ]

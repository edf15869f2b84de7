"""``django.tasks`` on weft: ``TASKS = {"default": {"BACKEND": "django_weft.tasks.WeftBackend"}}``.

The names a project writes come from here (``WeftBackend``, ``WeftTask``, ``abort``,
``aabort``), loaded on first use: importing this package needs no tasks framework, so
``django_weft`` works on Django 5.2 without the backport, and only using a name here
asks for ``django.tasks`` (Django 6.0+) or ``django-tasks`` (``django-weft[tasks]``).
"""

from __future__ import annotations

import importlib
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from django_weft.lazy_exports import load_export

_HOMES = {
    "WeftBackend": "django_weft.tasks.backend",
    "WeftTask": "django_weft.tasks.options",
    "abort": "django_weft.tasks.aborting",
    "aabort": "django_weft.tasks.aborting",
}

__all__ = [*_HOMES, "framework_installed", "install"]


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use, and keep it for the next."""
    return load_export(__name__, _HOMES, globals(), name)


def framework_installed() -> bool:
    """Whether ``django.tasks`` or the ``django_tasks`` backport can be imported."""
    return find_spec("django.tasks") is not None or find_spec("django_tasks") is not None


def install() -> None:
    """Where a tasks framework is installed, let this process find tasks by their path
    and hear their runs finish (called by the app's ``ready()``)."""
    if framework_installed():
        # Loaded here, not at the top: they import models, which ready() waits for, and
        # the framework, which Django 5.2 may not have.
        for module in ("django_weft.tasks.backend", "django_weft.tasks.announcing"):
            importlib.import_module(module).install()


if TYPE_CHECKING:
    from django_weft.tasks.aborting import aabort as aabort
    from django_weft.tasks.aborting import abort as abort
    from django_weft.tasks.backend import WeftBackend as WeftBackend
    from django_weft.tasks.options import WeftTask as WeftTask

"""The tasks framework the backend plugs into: Django's own ``django.tasks`` (Django 6.0
and later) or, on Django 5.2, the ``django-tasks`` backport (``django-weft[tasks]``).

Every other module of :mod:`django_weft.tasks` takes the framework's names from here, so
that which one is installed is decided in one place. Importing this module without
either raises an ``ImportError`` that says what to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

try:
    from django.tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        Task,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        default_task_backend,
        task,
        task_backends,
    )
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import TaskError
    from django.tasks.exceptions import (
        InvalidTask,
        InvalidTaskBackend,
        TaskResultDoesNotExist,
        TaskResultMismatch,
    )
    from django.tasks.signals import task_enqueued, task_finished, task_started
    from django.utils.json import normalize_json
except ImportError:  # pragma: no cover - Django 5.2: the backport, or nothing
    try:
        # django-tasks 0.12: Django 6.0's API, but for the homes of Task and
        # normalize_json, and two names. (One import per module: mypy reports a
        # missing module once per statement.)
        from django_tasks import (  # type: ignore[import-not-found,no-redef]  # noqa: I001
            DEFAULT_TASK_BACKEND_ALIAS,
            DEFAULT_TASK_QUEUE_NAME,
            TaskContext,
            TaskResult,
            TaskResultStatus,
            default_task_backend,
            task,
            task_backends,
        )
        from django_tasks.backends.base import (  # type: ignore[import-not-found,no-redef]
            BaseTaskBackend,
        )
        from django_tasks.base import (  # type: ignore[import-not-found,no-redef]
            Task,
            TaskError,
        )
        from django_tasks.exceptions import (  # type: ignore[import-not-found,no-redef]
            InvalidTaskBackendError as InvalidTaskBackend,
            InvalidTaskError as InvalidTask,
            TaskResultDoesNotExist,
            TaskResultMismatch,
        )
        from django_tasks.signals import (  # type: ignore[import-not-found,no-redef]
            task_enqueued,
            task_finished,
            task_started,
        )
        from django_tasks.utils import (  # type: ignore[import-not-found,no-redef]
            normalize_json,
        )
    except ImportError:
        raise ImportError(
            "django_weft.tasks needs a tasks framework: Django 6.0 or later (django.tasks), "
            "or the django-tasks backport on Django 5.2 (pip install 'django-weft[tasks]')"
        ) from None

if TYPE_CHECKING:
    # A task or result of any signature, where the backend handles every one alike.
    # (Django's Task and TaskResult are generic in their stubs only.)
    AnyTask: TypeAlias = Task[..., Any]
    AnyResult: TypeAlias = TaskResult[..., Any]

__all__ = [
    "DEFAULT_TASK_BACKEND_ALIAS",
    "DEFAULT_TASK_QUEUE_NAME",
    "BaseTaskBackend",
    "InvalidTask",
    "InvalidTaskBackend",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultMismatch",
    "TaskResultStatus",
    "default_task_backend",
    "normalize_json",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]

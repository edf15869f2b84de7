"""Settings for ``compare.py``: one system per process, in a PostgreSQL database of its own.

``compare.py`` runs every measurement in a child process configured for one system,
and that child starts the system's worker processes with the same environment:

- ``WEFT_COMPARE_SYSTEM``: ``weft``, ``tasks_db``, ``procrastinate`` or ``celery_beat``;
- ``WEFT_COMPARE_DATABASE``: the database (``compare.py`` creates and drops it);
- ``WEFT_COMPARE_CONN_MAX_AGE``: Django's ``CONN_MAX_AGE`` (default 0, Django's own);
- ``WEFT_BENCH_PG_HOST``/``_PORT``/``_USER``: the server (127.0.0.1:5432, postgres).

Each system gets only its own app and Django's defaults otherwise; what else each is
given (its documented settings for PostgreSQL) is in ``bench/README.md``.
"""

import os

import _setup

SYSTEM = os.environ.get("WEFT_COMPARE_SYSTEM", "")
SYSTEM_APPS = {
    "weft": ["rest_framework", "django_weft"],
    "tasks_db": ["django_tasks_db"],
    "procrastinate": ["procrastinate.contrib.django"],
    "celery_beat": ["django_celery_beat"],
}
if SYSTEM not in SYSTEM_APPS:
    raise RuntimeError(
        f"WEFT_COMPARE_SYSTEM must be one of {', '.join(SYSTEM_APPS)}, not {SYSTEM!r}"
    )

SECRET_KEY = "bench-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", *SYSTEM_APPS[SYSTEM]]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": _setup.pg_server()["host"],
        "PORT": _setup.pg_server()["port"],
        "USER": _setup.pg_server()["user"],
        "NAME": os.environ["WEFT_COMPARE_DATABASE"],
        "CONN_MAX_AGE": int(os.environ.get("WEFT_COMPARE_CONN_MAX_AGE", "0")),
    }
}

# django-tasks-db: its backend as the default one (Django 6's own django.tasks), only
# where its app is installed (its system check refuses the backend elsewhere).
if SYSTEM == "tasks_db":
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

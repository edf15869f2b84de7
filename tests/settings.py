"""Settings for the test suite.

``WEFT_TEST_DATABASE=postgres`` runs the suite against PostgreSQL at 127.0.0.1:5432
(user postgres, database test); the default is SQLite in a file, so that ``runjobs``
subprocesses share the test database.
"""

import os
from importlib.util import find_spec
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "tests-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc, served locally
    "django_weft",
    "example_project.content",
    "example_project.shell",
    "example_project.showcase",
    "tests",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "tests.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
STATIC_URL = "/static/"

DATABASE_VENDOR = os.environ.get("WEFT_TEST_DATABASE", "sqlite")
#: Set by tests that start ``runjobs`` subprocesses: the test database they must use.
#: Test databases are named after the pid so that several suites can run at once.
TEST_DATABASE_NAME = os.environ.get("WEFT_TEST_DATABASE_NAME", "")
DATABASES: dict[str, dict[str, Any]]
if DATABASE_VENDOR == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ.get("WEFT_TEST_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("WEFT_TEST_PG_PORT", "5432"),
            "USER": os.environ.get("WEFT_TEST_PG_USER", "postgres"),
            "NAME": TEST_DATABASE_NAME or os.environ.get("WEFT_TEST_PG_NAME", "test"),
            "TEST": {"NAME": TEST_DATABASE_NAME or f"test_weft_{os.getpid()}"},
        }
    }
    #: ``WEFT_TEST_PG_PREPARE=1`` runs on server-side binding with psycopg preparing
    #: each statement from its fifth execution, as docs/deployment.md suggests for a
    #: direct connection.
    if os.environ.get("WEFT_TEST_PG_PREPARE") == "1":
        DATABASES["default"]["OPTIONS"] = {"server_side_binding": True, "prepare_threshold": 5}
    #: Set by the PgBouncer fault tests: ``default`` then goes through a transaction pool
    #: (no server-side cursors there), and alias ``direct`` reaches the server itself.
    DIRECT_PORT = os.environ.get("WEFT_TEST_PG_DIRECT_PORT")
    if DIRECT_PORT:
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
        DATABASES["direct"] = {
            **DATABASES["default"],
            "PORT": DIRECT_PORT,
            "NAME": os.environ.get("WEFT_TEST_PG_DIRECT_NAME", DATABASES["default"]["NAME"]),
            "DISABLE_SERVER_SIDE_CURSORS": False,
            "TEST": {"MIRROR": "default"},
        }
elif DATABASE_VENDOR == "sqlite":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": TEST_DATABASE_NAME or str(BASE_DIR / "db.sqlite3"),
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 30},
            "TEST": {"NAME": TEST_DATABASE_NAME or str(BASE_DIR / f".test-{os.getpid()}.sqlite3")},
        }
    }
else:
    raise RuntimeError(f"WEFT_TEST_DATABASE must be sqlite or postgres, not {DATABASE_VENDOR!r}")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Users are made by the hundred in the tests: a hasher that costs nothing (Django's own
# advice for test settings). Never use it anywhere else.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

REST_FRAMEWORK = {"DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema"}

ASGI_APPLICATION = "tests.asgi.application"

#: ``WEFT_TEST_CHANNEL_LAYER=redis`` runs the suite on channels-redis at 127.0.0.1:6379.
#: django.tasks (Django 6.0+; ignored on 5.2) runs on weft: tests/tasks.
TASKS = {"default": {"BACKEND": "django_weft.tasks.WeftBackend", "QUEUES": []}}
#: The tests' task modules, which no app's ``tasks`` module imports: declared in every
#: process (a real ``runjobs`` runs their tasks), where a tasks framework is installed.
WEFT_JOB_MODULES = ["tests.flows.jobs", "tests.limits.jobs"] + (
    ["tests.tasks.fixtures", "tests.tasks.weft_fixtures"]
    if find_spec("django.tasks") or find_spec("django_tasks")
    else []
)

CHANNEL_LAYER = os.environ.get("WEFT_TEST_CHANNEL_LAYER", "memory")
REDIS_URL = os.environ.get("WEFT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
if CHANNEL_LAYER == "redis":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # Processes of one test share a prefix; separate suites never hear each other.
            "CONFIG": {
                "hosts": [REDIS_URL],
                "prefix": os.environ.get("WEFT_TEST_REDIS_PREFIX", f"weft-test-{os.getpid()}"),
            },
        }
    }
elif CHANNEL_LAYER == "memory":
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
else:
    raise RuntimeError(f"WEFT_TEST_CHANNEL_LAYER must be memory or redis, not {CHANNEL_LAYER!r}")

#: What the tests' scrapes of the metrics send (tests/observe), runjobs children too.
WEFT_METRICS_TOKEN = "tests-only-metrics-token"

# Tests that kill a worker start the others with a fast heartbeat through these.
WEFT_HEARTBEAT_INTERVAL = float(os.environ.get("WEFT_TEST_HEARTBEAT_INTERVAL", "5"))
WEFT_LOST_AFTER = float(os.environ.get("WEFT_TEST_LOST_AFTER", "30"))
WEFT_TIMEOUT_GRACE = float(os.environ.get("WEFT_TEST_TIMEOUT_GRACE", "30"))
WEFT_POLL_INTERVAL = float(os.environ.get("WEFT_TEST_POLL_INTERVAL", "1"))
# The PgBouncer fault tests LISTEN and hold liveness locks on alias "direct".
WEFT_LISTEN_DATABASE = os.environ.get("WEFT_TEST_LISTEN_DATABASE", "default")
WEFT_LIVENESS_DATABASE = os.environ.get("WEFT_TEST_LIVENESS_DATABASE", "default")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # runjobs subprocesses log at INFO: tests read what the worker says.
    "loggers": {
        "django_weft": {
            "handlers": ["console"],
            "level": os.environ.get("WEFT_TEST_LOG_LEVEL", "WARNING"),
        }
    },
}

"""The example content site. SQLite and the in-memory channel layer: no services needed.

Set ``DATABASE_URL``-style variables to try PostgreSQL and Redis instead:
``WEFT_EXAMPLE_POSTGRES=1`` (127.0.0.1:5432, user postgres, database weft_example; the
host from ``WEFT_EXAMPLE_POSTGRES_HOST``) and ``WEFT_EXAMPLE_REDIS=redis://127.0.0.1:6379/0``.
deploy/compose.yaml runs it so, in containers, with ``WEFT_EXAMPLE_LOG_FORMAT=json`` (one
JSON object per log line), ``WEFT_EXAMPLE_METRICS_TOKEN`` (the metrics' bearer token),
``DJANGO_ALLOWED_HOSTS`` (more host names, comma-separated) and
``WEFT_EXAMPLE_SILENCED_CHECKS`` (system check ids, comma-separated).
"""

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent
# The demo runs as it is, in DEBUG with a key everyone knows. With DJANGO_DEBUG=0 (anything
# facing a network) it needs a key of its own in DJANGO_SECRET_KEY.
DEBUG = os.environ.get("DJANGO_DEBUG", "1") not in ("0", "false", "False", "")
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-secret" if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("set DJANGO_SECRET_KEY: the example runs with DJANGO_DEBUG=0")
ALLOWED_HOSTS = [
    "127.0.0.1",
    "localhost",
    *filter(None, os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",")),
]
USE_TZ = True
TIME_ZONE = "UTC"

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
    "channels",
    "django_weft",
    "example_project.content",
    "example_project.shell",
    "example_project.showcase",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "example_project.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "example_project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

if os.environ.get("WEFT_EXAMPLE_POSTGRES"):
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ.get("WEFT_EXAMPLE_POSTGRES_HOST", "127.0.0.1"),
            "PORT": "5432",
            "USER": "postgres",
            "NAME": "weft_example",
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("WEFT_EXAMPLE_DB", str(BASE_DIR / "db.sqlite3")),
            # Writers queue for the lock instead of failing (see check django_weft.W001).
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
        }
    }

if os.environ.get("WEFT_EXAMPLE_REDIS"):
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [os.environ["WEFT_EXAMPLE_REDIS"]]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REST_FRAMEWORK = {"DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema"}

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/shell/"

LOG_FORMAT = os.environ.get("WEFT_EXAMPLE_LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"WEFT_EXAMPLE_LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "django_weft.observe.logs.JSONFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "loggers": {"django_weft": {"handlers": ["console"], "level": "INFO", "propagate": False}},
}

# Short for the demo, so the worker's decisions show up in the log quickly.
WEFT_POLL_INTERVAL = 1.0
WEFT_DOCUMENT_ACCESS = "example_project.access.documents"
# Prometheus scrapes /weft/metrics/ with this token (docs/metrics.md); without it only
# signed-in users with view_run (admin) read them.
WEFT_METRICS_TOKEN = os.environ.get("WEFT_EXAMPLE_METRICS_TOKEN") or None
# In a container that forbids namespaces the sandbox cannot contain modules (E030): its
# runs fail closed, and the compose file silences the check so the rest starts.
SILENCED_SYSTEM_CHECKS = list(
    filter(None, os.environ.get("WEFT_EXAMPLE_SILENCED_CHECKS", "").split(","))
)

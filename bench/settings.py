"""Minimal settings for the benchmarks (see ``_setup.py``, which picks the database).

The database comes from the environment so that worker subprocesses started by a
benchmark use the throwaway database the benchmark created:

- ``WEFT_BENCH_DATABASE``: ``sqlite`` (default) or ``postgres``;
- ``WEFT_BENCH_NAME``: the SQLite file, or the PostgreSQL database (default ``weft_bench``);
- ``WEFT_BENCH_PG_HOST``/``_PORT``/``_USER``: the PostgreSQL server (127.0.0.1:5432, postgres);
- ``WEFT_BENCH_CONN_MAX_AGE``: Django's ``CONN_MAX_AGE`` (default 0, Django's own default).
"""

import os

SECRET_KEY = "bench-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "rest_framework",
    "django_weft",
]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# django.tasks on weft (task_throughput.py); Django 5.2 without the backport ignores it.
TASKS = {"default": {"BACKEND": "django_weft.tasks.WeftBackend"}}

DATABASE_VENDOR = os.environ.get("WEFT_BENCH_DATABASE", "sqlite")
DATABASE_NAME = os.environ.get("WEFT_BENCH_NAME", "")
CONN_MAX_AGE = int(os.environ.get("WEFT_BENCH_CONN_MAX_AGE", "0"))

if DATABASE_VENDOR == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ.get("WEFT_BENCH_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("WEFT_BENCH_PG_PORT", "5432"),
            "USER": os.environ.get("WEFT_BENCH_PG_USER", "postgres"),
            "NAME": DATABASE_NAME or "weft_bench",
            "CONN_MAX_AGE": CONN_MAX_AGE,
        }
    }
elif DATABASE_VENDOR == "sqlite":
    if not DATABASE_NAME:
        raise RuntimeError("WEFT_BENCH_NAME must name the SQLite file (bench/_setup.py sets it)")
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATABASE_NAME,
            # timeout: how long a writer waits for the lock (seconds) before "database is
            # locked"; the worker subprocesses of run_throughput contend for it.
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 30},
            "CONN_MAX_AGE": CONN_MAX_AGE,
        }
    }
else:
    raise RuntimeError(f"WEFT_BENCH_DATABASE must be sqlite or postgres, not {DATABASE_VENDOR!r}")

# WEFT_BENCH_CHANNEL_LAYER=redis: live views deployed as docs/live.md deploys them
# (channels-redis at 127.0.0.1:6379, database 14 so as not to meet the tests' Redis
# databases), so that every change is published as it is in production.
if os.environ.get("WEFT_BENCH_CHANNEL_LAYER") == "redis":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [os.environ.get("WEFT_BENCH_REDIS", "redis://127.0.0.1:6379/14")]},
        }
    }

"""Shared setup of the benchmarks: settings, a throwaway database, and the machine.

A benchmark script calls :func:`setup` first thing. It parses ``--database`` (and the
script's own options), creates a fresh database, configures Django with
``bench.settings``, imports ``bench.jobs``, migrates, prints the machine, and drops the
database again when the script exits. Worker subprocesses run ``bench/manage.py``,
which calls :func:`configure` and finds the same database through the environment.
"""

from __future__ import annotations

import argparse
import atexit
import os
import platform
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: ``WEFT_BENCH_PG_NAME`` names another database, so that two benchmarks can run at once.
PG_DATABASE = os.environ.get("WEFT_BENCH_PG_NAME", "weft_bench")
#: The database the throwaway PostgreSQL database is created from and dropped through.
PG_ADMIN_DATABASE = "test"


def configure() -> None:
    """Configure Django with the bench settings and register the bench jobs."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    import django

    django.setup()
    import bench.jobs  # noqa: F401  (registers bench.noop and bench.sleep)


def setup(
    description: str, add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    """Parse the command line, create and migrate a fresh database, print the machine."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument(
        "--conn-max-age",
        type=int,
        default=0,
        metavar="SECONDS",
        help="Django's CONN_MAX_AGE for this process and its workers (default: 0, Django's own).",
    )
    if add_arguments is not None:
        add_arguments(parser)
    options = parser.parse_args()
    os.environ["WEFT_BENCH_DATABASE"] = options.database
    os.environ["WEFT_BENCH_CONN_MAX_AGE"] = str(options.conn_max_age)
    if options.database == "postgres":
        _create_postgres()
    else:
        _create_sqlite()
    configure()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print_machine()
    atexit.register(lambda: print(f"\nat the end: {_load()}"))
    return options


def _close_connections() -> None:
    """Close this process's connections, waiting for stopped LISTEN threads to let go."""
    import threading

    from django.db import connections

    for thread in threading.enumerate():
        if thread.name == "weft-listen":
            thread.join(timeout=2.0)
    connections.close_all()


def _create_sqlite() -> None:
    directory = tempfile.mkdtemp(prefix="weft-bench-")
    os.environ["WEFT_BENCH_NAME"] = str(Path(directory, "bench.sqlite3"))

    def remove() -> None:
        _close_connections()
        shutil.rmtree(directory, ignore_errors=True)

    atexit.register(remove)


def _pg_admin_connection():  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(
        host=os.environ.get("WEFT_BENCH_PG_HOST", "127.0.0.1"),
        port=os.environ.get("WEFT_BENCH_PG_PORT", "5432"),
        user=os.environ.get("WEFT_BENCH_PG_USER", "postgres"),
        dbname=PG_ADMIN_DATABASE,
        autocommit=True,
    )


def _create_postgres() -> None:
    os.environ["WEFT_BENCH_NAME"] = PG_DATABASE
    with _pg_admin_connection() as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {PG_DATABASE}")

    def drop() -> None:
        _close_connections()
        with _pg_admin_connection() as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")

    atexit.register(drop)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _load() -> str:
    """The load average: other work on the machine skews every figure."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def print_machine() -> None:
    import django
    from django.conf import settings
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            (version,) = cursor.fetchone()
        database = f"PostgreSQL {version} (database {settings.DATABASES['default']['NAME']})"
    else:
        import sqlite3

        options = settings.DATABASES["default"]["OPTIONS"]
        database = (
            f"SQLite {sqlite3.sqlite_version} (file {settings.DATABASES['default']['NAME']}, "
            f"transaction_mode {options['transaction_mode']})"
        )
    system = f"{platform.system()} {platform.release()}"
    print(f"machine:  {_cpu_model()}, {os.cpu_count()} cores, {system}, {_load()}")
    print(f"python:   {platform.python_version()}, Django {django.get_version()}")
    print(f"database: {database}, CONN_MAX_AGE {settings.CONN_MAX_AGE}")
    print()


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (linear interpolation)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def analyze() -> None:
    """Refresh the planner statistics on PostgreSQL (after bulk loads); a no-op on SQLite."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def manage_command(*arguments: str) -> list[str]:
    """The command line of ``bench/manage.py`` with ``arguments``, on this interpreter."""
    return [sys.executable, str(REPO / "bench" / "manage.py"), *arguments]


def load_hourly_schedules(prefix: str, dues: Sequence[datetime]) -> None:
    """Bulk-load armed, enabled hourly ``bench.noop`` schedules, one per due moment.

    ``bulk_create`` skips ``save()`` (and its validation), which is what makes loading
    100,000 rows quick; the rows are as the scheduler would have armed them.
    """
    from django_weft.models import Schedule

    Schedule.objects.bulk_create(
        [
            Schedule(
                name=f"{prefix}-{index:06d}",
                job="bench.noop",
                every=timedelta(hours=1),
                armed=True,
                enabled=True,
                next_due=due,
            )
            for index, due in enumerate(dues)
        ],
        batch_size=1000,
    )

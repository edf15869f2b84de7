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
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypedDict

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: ``WEFT_BENCH_PG_NAME`` names another database, so that two benchmarks can run at once.
PG_DATABASE = os.environ.get("WEFT_BENCH_PG_NAME", "weft_bench")
#: The database the throwaway PostgreSQL database is created from and dropped through.
PG_ADMIN_DATABASE = "test"


def configure(settings_module: str = "bench.settings") -> None:
    """Configure Django with the bench settings and register the bench jobs."""
    os.environ["DJANGO_SETTINGS_MODULE"] = settings_module
    import django

    django.setup()
    import bench.jobs  # noqa: F401  (registers bench.noop and bench.sleep)


def setup(
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    settings_module: str = "bench.settings",
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
    configure(settings_module)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    _print_django_machine()
    atexit.register(print_load_at_end)
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


class PgServer(TypedDict):
    host: str
    port: str
    user: str


def pg_server() -> PgServer:
    """The PostgreSQL server the benchmarks use; ``WEFT_BENCH_PG_*`` change it."""
    return PgServer(
        host=os.environ.get("WEFT_BENCH_PG_HOST", "127.0.0.1"),
        port=os.environ.get("WEFT_BENCH_PG_PORT", "5432"),
        user=os.environ.get("WEFT_BENCH_PG_USER", "postgres"),
    )


def pg_admin_connection():  # type: ignore[no-untyped-def]
    """An autocommit connection to the database that others are created and dropped from."""
    import psycopg

    return psycopg.connect(**pg_server(), dbname=PG_ADMIN_DATABASE, autocommit=True)


def _create_postgres() -> None:
    """A fresh database, dropped at exit; with ``WEFT_BENCH_KEEP=1`` the one left by the
    last run (made if missing) is reused and kept, so a long fill is paid once."""
    os.environ["WEFT_BENCH_NAME"] = PG_DATABASE
    with pg_admin_connection() as admin:
        if os.environ.get("WEFT_BENCH_KEEP") == "1":
            found = admin.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [PG_DATABASE]
            ).fetchone()
            if found is None:
                admin.execute(f"CREATE DATABASE {PG_DATABASE}")
            return
        admin.execute(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {PG_DATABASE}")

    def drop() -> None:
        _close_connections()
        with pg_admin_connection() as admin:
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


def load_average() -> str:
    """The load average: other work on the machine skews every figure."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def print_load_at_end() -> None:
    print(f"\nat the end: {load_average()}")


def print_machine(software: str, database: str) -> None:
    """Print the machine, the Python and ``software`` on it, and ``database``.

    ``software`` names what is measured beside Python (Django, other packages);
    every benchmark prints these lines first, so figures can be told apart by machine.
    """
    system = f"{platform.system()} {platform.release()}"
    print(f"machine:  {_cpu_model()}, {os.cpu_count()} cores, {system}, {load_average()}")
    print(f"python:   {platform.python_version()}, {software}")
    print(f"database: {database}")
    print()


def _print_django_machine() -> None:
    """The machine lines for a benchmark of the configured Django database."""
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
    print_machine(
        f"Django {django.get_version()}", f"{database}, CONN_MAX_AGE {settings.CONN_MAX_AGE}"
    )


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


def time_idle_ticks(tick: Callable[[], object], count: int, warmup: int = 10) -> list[float]:
    """Seconds each of ``count`` calls of ``tick`` took, after ``warmup`` untimed ones.

    ``tick`` returns whether it did work; an idle tick must not, or what is timed is
    not the idle cost.
    """
    for _ in range(warmup):  # the connection, statement caches
        tick()
    samples = []
    for _ in range(count):
        begin = time.perf_counter()
        did = tick()
        samples.append(time.perf_counter() - begin)
        if did:
            raise RuntimeError("an idle tick did work")
    return samples


def analyze() -> None:
    """Refresh the planner statistics on PostgreSQL (after bulk loads); a no-op on SQLite."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def manage_command(*arguments: str, script: str = "manage.py") -> list[str]:
    """The command line of ``bench/<script>`` with ``arguments``, on this interpreter."""
    return [sys.executable, str(REPO / "bench" / script), *arguments]


def run_workers(command: Sequence[str], count: int, logs: Path, label: str) -> float:
    """Run ``count`` worker processes of ``command`` together until they all exit by
    themselves (``runjobs --once``); returns the wall seconds around them.

    Each one's output goes to ``<logs>/<label>-<index>.log``; one exiting with an error
    stops the benchmark, naming the logs.
    """
    log_files = [(logs / f"{label}-{index}.log").open("w") for index in range(count)]
    begin = time.perf_counter()
    processes = [
        subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT) for log in log_files
    ]
    for process in processes:
        process.wait()
    wall = time.perf_counter() - begin
    for log in log_files:
        log.close()
    failed = [process.returncode for process in processes if process.returncode != 0]
    if failed:
        raise SystemExit(f"a worker exited with {failed}; see the logs in {logs}")
    return wall


def drained_span(expected: int) -> tuple[float, list[int]]:
    """Seconds from the first claim to the last finish of the ``expected`` runs stored,
    and how many each worker ran (most first); stops the benchmark unless all are done."""
    from django.db.models import Max, Min

    from django_weft.models import Run, RunStatus

    done = Run.objects.filter(status=RunStatus.DONE).count()
    if done != expected:
        statuses = Counter(Run.objects.values_list("status", flat=True))
        raise SystemExit(f"{done} of {expected} runs done: {dict(statuses)}")
    span = Run.objects.aggregate(first=Min("started_at"), last=Max("finished_at"))
    per_worker = sorted(
        Counter(Run.objects.values_list("worker_id", flat=True)).values(), reverse=True
    )
    return (span["last"] - span["first"]).total_seconds(), per_worker


def load_hourly_schedules(prefix: str, dues: Sequence[datetime]) -> None:
    """Bulk-load armed, enabled hourly ``bench.noop`` schedules, one per due moment."""
    _load_schedules(prefix, dues, lambda due: {"every": timedelta(hours=1)})


def load_one_off_schedules(prefix: str, moments: Sequence[datetime]) -> None:
    """Bulk-load armed, enabled one-off ``bench.noop`` schedules, one ``at`` each moment."""
    _load_schedules(prefix, moments, lambda moment: {"at": moment})


def _load_schedules(
    prefix: str, dues: Sequence[datetime], plan: Callable[[datetime], dict[str, object]]
) -> None:
    """Bulk-load armed, enabled ``bench.noop`` schedules, one per due moment.

    ``bulk_create`` skips ``save()`` (and its validation), which is what makes loading
    100,000 rows quick; the rows are as the scheduler would have armed them.
    """
    from django_weft.models import Schedule

    Schedule.objects.bulk_create(
        [
            Schedule(
                name=f"{prefix}-{index:06d}",
                job="bench.noop",
                armed=True,
                enabled=True,
                next_due=due,
                **plan(due),  # type: ignore[arg-type]
            )
            for index, due in enumerate(dues)
        ],
        batch_size=1000,
    )

"""The console at scale: the overview, the run lists and the claim with 10,000,000
finished runs stored (DESIGN §8, issue 20).

Fills a PostgreSQL database of its own (``weft_console_scale``) with ``--runs``
finished runs (10,000,000) spread over ``--days`` (30) in a few ``INSERT ... SELECT
generate_series`` statements, the run table's indexes dropped during the load and built
again after it, as a restore would. 20 jobs over 3 queues; 95 % done, 4 % failed, 1 %
aborted, 1 in 1,000 lost; durations from 0.1 s to 5 min. Beside them 1,000 queued and
20 running runs and 4 workers. Then:

1. counts the history once (the worker's tally step until it has caught up: what a
   worker does in the background after an upgrade) and times it;
2. times the overview (every range, all and split by job) and the run list (the first
   page; filtered by status and by job; by queue) through Django's test client, signed
   in as a superuser, ``--repeat`` (20) times each after one untimed request, and the
   API's run list the same way, printing the median and the slowest, the queries each
   page made and whether any of them counts the run table;
3. times a claim of 10 queued runs (``--repeat`` claims), and shows its plan.

    WEFT_BENCH_KEEP=1 .venv/bin/python bench/console_scale.py --database postgres [--runs 10000000]

``WEFT_BENCH_KEEP=1`` keeps the filled database for the next run (which then skips the
fill); without it the database is dropped at the end.
"""

from __future__ import annotations

import os
import re
import time

os.environ.setdefault("WEFT_BENCH_PG_NAME", "weft_console_scale")

import _setup

JOBS, QUEUES = 20, ("default", "cpu", "reports")
#: A statement that counts the run table's rows with no condition.
WHOLE_COUNT = re.compile(r'SELECT COUNT\(\*\).*FROM "django_weft_run"(?!.*WHERE)', re.I | re.S)


def add_arguments(parser) -> None:  # type: ignore[no-untyped-def]
    parser.add_argument("--runs", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=2_000_000, help="rows per INSERT")


def run_columns(span_seconds: int, total: int) -> dict[str, str]:
    """Each column of the run table as an SQL expression of ``i`` (1..total)."""
    finished = f"now() - make_interval(secs => {span_seconds}.0 * i / {total})"
    duration = "make_interval(secs => 0.1 + (i % 3000) * 0.1 * ((i % 7) + 1) / 7)"
    status = (
        "CASE WHEN i % 1000 = 7 THEN 'lost' WHEN i % 100 = 3 THEN 'aborted' "
        "WHEN i % 25 = 1 THEN 'failed' ELSE 'done' END"
    )
    return {
        "id": "gen_random_uuid()",
        "job": f"'bench.job' || (i % {JOBS})",
        "job_version": "1",
        "args": "'{}'::jsonb",
        "status": status,
        "queue": f"(ARRAY{list(QUEUES)!r})[1 + i % {len(QUEUES)}]".replace('"', "'"),
        "priority": "0",
        "owner_id": "NULL",
        "schedule_id": "NULL",
        "due": "NULL",
        "idempotency_key": "NULL",
        "concurrency_key": "''",
        "state_id": "NULL",
        "attempt": "1",
        "worker_id": "NULL",
        "created_at": f"{finished} - {duration} - interval '0.2 seconds'",
        "started_at": f"{finished} - {duration}",
        "finished_at": finished,
        "abort_requested_at": "NULL",
        "retry_at": "NULL",
        "result": "NULL",
        "error_type": "CASE WHEN i % 25 = 1 THEN 'RuntimeError' ELSE '' END",
        "error_class_path": "CASE WHEN i % 25 = 1 THEN 'builtins.RuntimeError' ELSE '' END",
        "error_message": "CASE WHEN i % 25 = 1 THEN 'the bench failed it' ELSE '' END",
        "error_traceback": "''",
        "task_backend": "''",
        "run_after": "NULL",
        "version": "3",
    }


def fill(total: int, days: int, chunk: int) -> None:
    """``total`` finished runs, the run table's secondary indexes rebuilt after the load."""
    from django.db import connection

    from django_weft.models import Run

    columns = run_columns(days * 86400, total)
    table = [field.column for field in Run._meta.concrete_fields]
    missing = set(table) - set(columns)
    if missing:
        raise SystemExit(f"the fill does not know the run table's columns {sorted(missing)}")
    names = ", ".join(f'"{name}"' for name in table)
    values = ", ".join(columns[name] for name in table)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'django_weft_run' "
            "AND indexname NOT IN (SELECT conname FROM pg_constraint)"
        )
        indexes = cursor.fetchall()
        begin = time.perf_counter()
        for name, _definition in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("ALTER TABLE django_weft_run DISABLE TRIGGER USER")
        for first in range(1, total + 1, chunk):
            last = min(first + chunk - 1, total)
            cursor.execute(
                f"INSERT INTO django_weft_run ({names}) "
                f"SELECT {values} FROM generate_series({first}, {last}) AS i"
            )
            print(f"  loaded {last:,} runs ({time.perf_counter() - begin:.0f} s)", flush=True)
        cursor.execute("ALTER TABLE django_weft_run ENABLE TRIGGER USER")
        cursor.execute("SET maintenance_work_mem = '512MB'")
        for name, definition in indexes:
            cursor.execute(definition)
            print(f"  built {name} ({time.perf_counter() - begin:.0f} s)", flush=True)
        cursor.execute("VACUUM ANALYZE django_weft_run")
    print(f"filled {total:,} runs in {time.perf_counter() - begin:.0f} s\n")


def unfinished() -> None:
    """1,000 queued runs, 20 running on 4 workers."""
    from datetime import timedelta

    from django.utils import timezone

    from django_weft.models import Run, RunStatus, WorkerProcess

    now = timezone.now()
    workers = WorkerProcess.objects.bulk_create(
        [
            WorkerProcess(hostname=f"bench-{n}", pid=n, started_at=now, last_beat=now)
            for n in range(4)
        ]
    )
    Run.objects.bulk_create(
        [
            Run(job="bench.noop", queue=QUEUES[n % 3], created_at=now - timedelta(seconds=n))
            for n in range(1000)
        ]
    )
    Run.objects.bulk_create(
        [
            Run(
                job=f"bench.job{n % JOBS}",
                status=RunStatus.RUNNING,
                worker=workers[n % 4],
                created_at=now,
                started_at=now,
            )
            for n in range(20)
        ]
    )


def count_history() -> None:
    from django.utils import timezone

    from django_weft.engine.history.tallying import tally
    from django_weft.models import RunTally

    begin, steps = time.perf_counter(), 0
    while tally(timezone.now()):
        steps += 1
    wall = time.perf_counter() - begin
    rows = RunTally.objects.count()
    print(f"history counted: {steps} steps (an hour each) in {wall:.1f} s, {rows:,} summary rows")
    if steps:
        print(f"  {wall / steps * 1000:.0f} ms a step: what a worker spends a round while behind\n")


def time_pages(repeat: int) -> list[tuple[str, float, float, int, bool]]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    user = get_user_model().objects.filter(username="bench").first()
    if user is None:
        user = get_user_model().objects.create_superuser("bench", "bench@example.com", "pw")
    client = Client()
    client.force_login(user)
    pages = [
        *(
            (f"overview {span} {split}", f"/admin/django_weft/overview/?range={span}&split={split}")
            for span in ("1h", "24h", "7d", "30d")
            for split in ("all", "job")
        ),
        (
            "overview 30d by queue (live fragment)",
            "/admin/django_weft/overview/live/?range=30d&split=queue",
        ),
        ("run list, first page", "/admin/django_weft/run/"),
        ("run list, status done", "/admin/django_weft/run/?status__exact=done"),
        ("run list, status failed", "/admin/django_weft/run/?status__exact=failed"),
        ("run list, status lost", "/admin/django_weft/run/?status__exact=lost"),
        ("run list, job bench.job7", "/admin/django_weft/run/?job__exact=bench.job7"),
        ("run list, queue cpu", "/admin/django_weft/run/?queue__exact=cpu"),
        ("run list, page 50", "/admin/django_weft/run/?p=50"),
        ("API run list", "/api/weft/runs/"),
        ("API run list, status failed", "/api/weft/runs/?status=failed"),
        ("API run list, job bench.job7", "/api/weft/runs/?job=bench.job7"),
    ]
    results = []
    for label, url in pages:
        response = client.get(url)
        if response.status_code != 200:
            raise SystemExit(f"{label}: {url} answered {response.status_code}")
        samples = []
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as queries:
                begin = time.perf_counter()
                client.get(url)
                samples.append(time.perf_counter() - begin)
        counted = any(WHOLE_COUNT.search(query["sql"]) for query in queries.captured_queries)
        results.append(
            (label, _setup.median(samples), max(samples), len(queries.captured_queries), counted)
        )
        print(
            f"{label:42} median {_setup.median(samples) * 1000:6.1f} ms, "
            f"slowest {max(samples) * 1000:6.1f} ms, {len(queries.captured_queries):2} queries"
            + (", COUNTS THE WHOLE RUN TABLE" if counted else ""),
            flush=True,
        )
    return results


def time_claims(repeat: int) -> None:
    from django.db import connection, transaction
    from django.utils import timezone

    from django_weft.engine.runs.claiming import claim, deployed_pairs
    from django_weft.jobs.registry import registry
    from django_weft.models import WorkerProcess

    worker = WorkerProcess.objects.first()
    deployed = deployed_pairs([registry.get("bench.noop")])
    samples = []
    for _ in range(repeat):
        begin = time.perf_counter()
        with transaction.atomic():
            claimed = claim(deployed, limit=10, worker=worker, now=timezone.now(), queues=None)
        samples.append(time.perf_counter() - begin)
        if len(claimed) != 10:
            raise SystemExit(f"a claim took {len(claimed)} runs, not 10")
    print(
        f"\nclaim of 10 queued runs: median {_setup.median(samples) * 1000:.1f} ms, "
        f"slowest {max(samples) * 1000:.1f} ms"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS) SELECT id FROM django_weft_run WHERE status = 'queued' "
            "ORDER BY priority DESC, COALESCE(run_after, created_at), created_at, due LIMIT 10"
        )
        print("  the claim's pick:", *(f"    {row}" for (row,) in cursor.fetchall()), sep="\n")


def main() -> None:
    options = _setup.setup(
        __doc__.split("\n\n")[0], add_arguments, settings_module="bench.console_settings"
    )
    if options.database != "postgres":
        raise SystemExit("console_scale.py measures PostgreSQL: pass --database postgres")
    from django_weft.models import Run

    present = Run.objects.filter(status="done").exists() and Run.objects.count()
    if present and present >= options.runs:
        print(f"reusing the {present:,} runs stored (WEFT_BENCH_KEEP=1)\n")
    else:
        fill(options.runs, options.days, options.chunk)
        unfinished()
    count_history()
    time_pages(options.repeat)
    time_claims(options.repeat)


if __name__ == "__main__":
    main()

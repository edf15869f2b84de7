"""One run of ``compare.py`` inside its virtualenv: set up, measure, report, clean up.

Whatever happens (an error, Ctrl-C, SIGTERM), the ``finally`` stops the running
measurement with its workers (``compare_children``) and drops the databases
(``compare_server``); the logs are kept when the run did not finish.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from types import FrameType

import _setup
import compare_children
import compare_plan
import compare_redis
import compare_report
import compare_server


def interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM stops a run as Ctrl-C does: through the ``finally`` that cleans up."""
    raise KeyboardInterrupt


def run(*, mode: str, repeat: int | None, jobs: int | None) -> None:
    sizes = {"quick": compare_plan.QUICK, "tiny": compare_plan.TINY}.get(mode, compare_plan.FULL)
    if jobs is not None:
        sizes = replace(sizes, jobs=jobs)
    repeats = repeat or (3 if mode == "full" else 1)
    signal.signal(signal.SIGTERM, interrupt)
    # Every Redis key of this run (Celery's broker, the channel layer) starts with this.
    os.environ["WEFT_COMPARE_REDIS_PREFIX"] = f"weft-compare-{os.getpid()}"
    redis_version = compare_redis.check()
    server = compare_server.Server()
    logs = Path(tempfile.mkdtemp(prefix="weft-compare-logs-"))
    finished = False
    try:
        print_machine(server, redis_version)
        systems = list(compare_plan.SYSTEM_NAMES)
        server.create([compare_server.CEILING_DATABASE, *map(compare_server.database, systems)])
        for system in systems:
            compare_children.run(
                system, "migrate", {"label": f"migrate-{system}"}, conn_max_age=0, logs=logs
            )
        results = compare_plan.Results()
        for number in range(1, repeats + 1):
            if number > 1:
                print()
            print(f"repeat {number} of {repeats}", flush=True)
            compare_plan.run_repeat(
                number, sizes, results, logs, lambda line: print(f"  {line}", flush=True)
            )
        lines, ratio_lines = compare_report.report(results, sizes)
        print("\n".join(lines))
        _setup.print_load_at_end()
        print("\n".join(ratio_lines))
        finished = True
    except KeyboardInterrupt:
        print("\ncompare.py: interrupted; stopping workers, dropping databases", file=sys.stderr)
        raise SystemExit(130) from None
    except compare_children.MeasurementFailed as error:
        print(f"compare.py: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    finally:
        server.close()
        compare_redis.clean()
        if finished:
            shutil.rmtree(logs, ignore_errors=True)
        else:
            print(f"compare.py: the logs are in {logs}", file=sys.stderr)


def print_machine(server: compare_server.Server, redis_version: str) -> None:
    commit = subprocess.run(
        ["git", "-C", str(_setup.REPO), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    software = (
        f"Django {version('django')}; django-weft {version('django-weft')} "
        f"(this working tree, {commit or 'not a git checkout'}), "
        f"django-tasks-db {version('django-tasks-db')}, procrastinate {version('procrastinate')}, "
        f"django-celery-beat {version('django-celery-beat')}, celery {version('celery')}, "
        f"django-celery-results {version('django-celery-results')}, channels-redis "
        f"{version('channels-redis')}, redis-py {version('redis')}, uvicorn "
        f"{version('uvicorn')}, websockets {version('websockets')}, psycopg {version('psycopg')}; "
        f"Redis {redis_version} at {compare_redis.URL}"
    )
    where = "{host}:{port}".format(**_setup.pg_server())
    _setup.print_machine(
        software, f"PostgreSQL {server.version} at {where}, databases {compare_server.PREFIX}*"
    )

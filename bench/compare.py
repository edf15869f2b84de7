"""django-weft side by side with django-tasks-db, procrastinate and django-celery-beat.

    python bench/compare.py [--quick] [--repeat 3] [--jobs 10000]

Installs the other systems into a virtualenv of its own (``bench/.venv-compare``,
from ``bench/requirements-compare.txt``, with django-weft from this working tree) on
the newest Python >= 3.12, re-runs itself in it, and measures every system on one
PostgreSQL (127.0.0.1:5432 as postgres; ``WEFT_BENCH_PG_*`` change it), each in a
database of its own, interleaved, ``--repeat`` times: no-op runs/s with 1 and 2
worker processes, enqueue rates, start -> run latency, the commit ceiling of one
connection, django-weft's due one-off fires, and idle scheduler ticks. See
``bench/README.md`` for what each figure is and how each system is configured.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import _setup

VENV = _setup.REPO / "bench" / ".venv-compare"
REQUIREMENTS = _setup.REPO / "bench" / "requirements-compare.txt"
#: Written into the virtualenv once it is installed: what it was installed from.
INSTALLED = VENV / "installed-from.sha256"


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument(
        "--quick",
        action="store_true",
        help="A few-minute version: 1,000 jobs, 30 latency samples, 2,000 due schedules, 1 repeat.",
    )
    sizes.add_argument(
        "--tiny",
        action="store_true",
        help="The smallest run, end to end (30 jobs, 20 sockets): checks that it works.",
    )
    parser.add_argument(
        "--repeat", type=positive, default=None, help="Repeats (default: 3, 1 with --quick)."
    )
    parser.add_argument(
        "--jobs",
        type=positive,
        default=None,
        help="No-op jobs per throughput measurement (default: 5,000, 1,000 with --quick).",
    )
    return parser.parse_args()


def positive(text: str) -> int:
    """A whole number of at least 1 (argparse reports what ``int()`` refuses)."""
    if (value := int(text)) < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


# -- the virtualenv ----------------------------------------------------------------------


def in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def newest_python() -> str:
    """The interpreter ``scripts/_env.sh`` picks (pyenv's newest, or ``WEFT_PYTHON``)."""
    found = subprocess.run(
        ["bash", "-c", 'source "$0" && find_python', str(_setup.REPO / "scripts" / "_env.sh")],
        capture_output=True,
        text=True,
    )
    python = found.stdout.strip()
    if found.returncode != 0 or not python:
        raise SystemExit(f"compare.py: no Python found: {found.stderr.strip()}")
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version_info >= (3, 12))"],
        capture_output=True,
        text=True,
    )
    if version.stdout.strip() != "True":
        raise SystemExit(
            f"compare.py needs Python 3.12 or newer (Django 6), and {python} is older; "
            "install one with pyenv, or set WEFT_PYTHON=/path/to/python3.12"
        )
    return python


def source_digest() -> str:
    """What the virtualenv depends on: the pins and django-weft's own dependencies."""
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, _setup.REPO / "pyproject.toml"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def ensure_venv() -> Path:
    """Create or update ``bench/.venv-compare``; its Python."""
    python = VENV / "bin" / "python"
    if not python.exists():
        interpreter = newest_python()
        print(f"==> creating {VENV} with {interpreter}", flush=True)
        subprocess.run([interpreter, "-m", "venv", str(VENV)], check=True)
    if not INSTALLED.exists() or INSTALLED.read_text() != source_digest():
        print(f"==> installing {REQUIREMENTS.name} and django-weft (editable)", flush=True)
        installed = subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--editable",
                f"{_setup.REPO}[postgres,http,bench]",
                "--requirement",
                str(REQUIREMENTS),
            ],
        )
        if installed.returncode != 0:
            raise SystemExit(
                f"compare.py: pip could not install into {VENV} (exit {installed.returncode}); "
                f"see its output above, or remove {VENV} and run compare.py again"
            )
        INSTALLED.write_text(source_digest())
    return python


def main() -> None:
    options = parse_arguments()
    if not in_venv():
        python = ensure_venv()
        os.execv(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])
    # The run imports psycopg, Django and the other systems, which only the virtualenv has.
    import compare_run

    mode = "quick" if options.quick else "tiny" if options.tiny else "full"
    compare_run.run(mode=mode, repeat=options.repeat, jobs=options.jobs)


if __name__ == "__main__":
    main()

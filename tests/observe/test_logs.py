"""JSON logs: the formatter, and the LOGGING dict docs/deployment.md shows, in a real
process (configuring logging here would change it for the rest of the suite)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from datetime import UTC, datetime

from django_weft.observe.logs import JSONFormatter
from tests.processes import ROOT
from tests.test_docs import doc_block


def record(message: str, *args: object, **fields: object) -> logging.LogRecord:
    made = logging.LogRecord(
        "django_weft.worker", logging.WARNING, __file__, 1, message, args, None
    )
    made.created = datetime(2026, 3, 7, 11, 0, 0, 250000, tzinfo=UTC).timestamp()
    for name, value in fields.items():
        setattr(made, name, value)
    return made


def test_json_formatter_writes_one_object_per_record() -> None:
    """Time in UTC to the millisecond, level, logger, the message with its arguments, the pid."""
    line = JSONFormatter().format(record("claimed %d run(s)", 3))
    assert "\n" not in line
    assert json.loads(line) == {
        "time": "2026-03-07T11:00:00.250+00:00",
        "level": "WARNING",
        "logger": "django_weft.worker",
        "message": "claimed 3 run(s)",
        "process": logging.LogRecord("", 0, "", 0, "", None, None).process,
    }


def test_json_formatter_keeps_extra_fields_and_writes_the_rest_as_text() -> None:
    """``extra`` fields come under their own names; what JSON cannot hold, as its str()."""
    moment = datetime(2026, 3, 7, 11, 0, tzinfo=UTC)
    entry = json.loads(JSONFormatter().format(record("x", run="r-1", due=moment, n=2)))
    assert (entry["run"], entry["due"], entry["n"]) == ("r-1", str(moment), 2)


def test_json_formatter_writes_the_traceback() -> None:
    """An exception's formatted traceback is ``exception``, in the same line."""
    try:
        raise ValueError("broken pipe")
    except ValueError:
        made = record("step failed")
        made.exc_info = sys.exc_info()
    entry = json.loads(JSONFormatter().format(made))
    assert entry["exception"].startswith("Traceback (most recent call last):")
    assert entry["exception"].endswith("ValueError: broken pipe")


def test_json_logging_as_docs_deployment_shows_it() -> None:
    """The documented LOGGING dict, in a process of its own: weft's lines come out as JSON."""
    code = "\n".join(
        [
            "import logging, logging.config",
            doc_block("deployment.md", "JSONFormatter"),
            "logging.config.dictConfig(LOGGING)",
            "log = logging.getLogger('django_weft.scheduler')",
            "log.info('fired %s', 'digest', extra={'run': 'r-1'})",
            "try:\n    1 / 0\nexcept ZeroDivisionError:\n    log.exception('step failed')",
        ]
    )
    printed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    fired, failed = (json.loads(line) for line in printed.splitlines())
    assert (fired["logger"], fired["level"], fired["message"], fired["run"]) == (
        "django_weft.scheduler",
        "INFO",
        "fired digest",
        "r-1",
    )
    assert failed["message"] == "step failed"
    assert failed["exception"].endswith("ZeroDivisionError: division by zero")

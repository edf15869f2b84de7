"""Structured logs: one JSON object per line, for log stores that parse JSON.

Use it from ``LOGGING`` (docs/deployment.md)::

    "formatters": {"json": {"()": "django_weft.observe.logs.JSONFormatter"}}

Each line holds ``time`` (ISO 8601, UTC, milliseconds), ``level``, ``logger``,
``message`` (with its arguments filled in), ``process`` (the pid: several ``runjobs``
write to one stream), ``exception`` when there is one (the formatted traceback), and every
``extra={...}`` field a call passed, under its own name. A value JSON cannot hold is
written as its ``str()``, so a log call never fails for what it logs.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

#: What every LogRecord holds: not "extra" fields, and not written a second time.
RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


class JSONFormatter(logging.Formatter):
    """Formats each record as one line of JSON (see the module's docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": record.process,
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        for name, value in vars(record).items():
            if name not in RECORD_ATTRIBUTES and name not in entry:
                entry[name] = value
        return json.dumps(entry, default=str, ensure_ascii=False)

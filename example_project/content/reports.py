"""The daily report: a module an agent wrote, stored in the database and run in the sandbox.

A schedule runs it with the built-in ``weft.module`` job at noon, Toronto time; when
such a run is done, :func:`record_report` appends its answer to the ledger.
"""

from __future__ import annotations

from typing import Any

from django_weft import change_document
from django_weft.models import Run, RunStatus
from example_project.content.jobs import ledger_document

DAILY_REPORT = "report/daily"

#: What the agent wrote. It reads the day from its run's due: ``context["due"]``.
DAILY_REPORT_SOURCE = '''\
def default():
    """The day's report: what the site published on the day the run was due."""
    day = (context["due"] or "")[:10]
    return f"report for {day}: 3 posts, 12 comments"
'''

#: The schedule that runs it, as ``Schedule`` fields.
DAILY_REPORT_SCHEDULE: dict[str, Any] = {
    "job": "weft.module",
    "args": {"module": DAILY_REPORT},
    "cron": "0 12 * * *",
    "timezone": "America/Toronto",
}


def record_report(sender: type[Run], run: Run, **kwargs: Any) -> None:
    """Receives ``run_finished``: a done run of the daily report lands in the ledger."""
    if run.job != "weft.module" or run.args.get("module") != DAILY_REPORT:
        return
    if run.status == RunStatus.DONE:
        change_document(ledger_document(), lambda data: data["reports"].append(run.result))

"""The content-site scenario: a week in the life of a site's schedules, on a driven clock.

A nightly digest at 07:00 Toronto, an hourly cleanup, a reminder that was overdue
when the worker started, and a daily report at noon Toronto that an agent wrote as a
module, stored in the database and run in the sandbox (a real child process); then
live edits (the report's module among them), a job that raises, and a restart three
days later. Everything below is read back from the database, as an operator would.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from django_weft.models import LastStatus, Module, Schedule
from django_weft.sandbox.modules import save_module
from django_weft.testing import DrivenClock, Rehearsal
from example_project.content.jobs import ledger_document
from example_project.content.reports import (
    DAILY_REPORT,
    DAILY_REPORT_SCHEDULE,
    DAILY_REPORT_SOURCE,
)

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def ledger() -> dict:
    return ledger_document().data


@pytest.mark.slow
def test_seed_content_site_week(clock: DrivenClock, rehearsal: Rehearsal, failures: list) -> None:
    """Two days across the DST change, the sandboxed report, live edits, failures and a
    restart behave as designed."""
    digest = Schedule.objects.create(
        name="digest", job="content.digest", cron="0 7 * * *", timezone="America/Toronto"
    )
    Schedule.objects.create(name="cleanup", job="content.cleanup", every=HOUR)
    Schedule.objects.create(
        name="renew",
        job="content.remind",
        args={"text": "renew the domain"},
        at=clock.now() - timedelta(minutes=20),
    )
    save_module(Module(name=DAILY_REPORT, source=DAILY_REPORT_SOURCE))
    Schedule.objects.create(name="report", **DAILY_REPORT_SCHEDULE)

    # -- two days of schedule ------------------------------------------------------------
    rehearsal.advance(26 * HOUR)
    data = ledger()
    assert data["digests"] == 2
    assert data["dues"]["digest"] == [
        utc(2026, 3, 7, 12, 0).isoformat(),  # 07:00 EST
        utc(2026, 3, 8, 11, 0).isoformat(),  # 07:00 EDT, after the clocks went forward
    ]
    assert data["cleanups"] == 26
    assert data["reminders"] == ["renew the domain"]
    assert data["dues"]["remind"] == [utc(2026, 3, 7, 10, 40).isoformat()]
    # Noon in Toronto, 17:00 UTC: the stored module ran in the sandbox.
    assert data["reports"] == ["report for 2026-03-07: 3 posts, 12 comments"]
    report = Schedule.objects.get(name="report")
    assert report.last_due == utc(2026, 3, 7, 17, 0)
    assert report.last_run is not None
    assert report.last_run.state is not None
    layers = report.last_run.state.data["layers"]
    assert all(layers[name]["active"] for name in ("limits", "restricted_python", "audit_hook"))
    assert set(Schedule.objects.values_list("last_status", flat=True)) == {LastStatus.OK}

    # -- live edits ------------------------------------------------------------------------
    Schedule.objects.create(
        name="stand-up", job="content.remind", args={"text": "stand up"}, at=clock.now() + HOUR
    )
    never = Schedule.objects.create(
        name="sit-down", job="content.remind", args={"text": "sit down"}, at=clock.now() + HOUR
    )
    never.delete()
    rehearsal.advance(HOUR)
    assert ledger()["reminders"] == ["renew the domain", "stand up"]

    broken = Schedule.objects.create(name="broken", job="tests.broken", every=timedelta(seconds=1))
    rehearsal.advance(timedelta(seconds=3.5))
    broken.refresh_from_db()
    assert broken.last_status == LastStatus.FAILED
    assert broken.last_error_message == "broken has no rows to work on"
    assert broken.last_error_type == "RuntimeError"
    assert len(failures) == 3
    assert all(f["schedule"].name == "broken" for f in failures)
    assert all(f["message"] == "broken has no rows to work on" for f in failures)
    broken.delete()

    digest.refresh_from_db()
    digest.cron = "0 8 * * *"
    digest.save()
    before = ledger()["digests"]
    rehearsal.advance(DAY)
    assert ledger()["digests"] == before + 1
    assert ledger()["dues"]["digest"][-1] == utc(2026, 3, 9, 12, 0).isoformat()  # 08:00 EDT
    assert ledger()["reports"] == [
        "report for 2026-03-07: 3 posts, 12 comments",
        "report for 2026-03-08: 3 posts, 12 comments",  # noon EDT, 16:00 UTC
    ]

    # The agent edits its module while the worker runs: the next report uses the edit.
    module = Module.objects.get(name=DAILY_REPORT)
    module.source = DAILY_REPORT_SOURCE.replace("3 posts, 12 comments", "4 posts, 15 comments")
    save_module(module)

    # -- a restart, three days later ----------------------------------------------------------
    digest.refresh_from_db()
    last_digest_started = digest.last_started
    rehearsal.restart(down=3 * DAY)
    rows = {row.name: row for row in Schedule.objects.all()}
    assert sorted(rows) == ["cleanup", "digest", "renew", "report", "stand-up"]
    assert rows["digest"].last_started == last_digest_started
    assert rows["digest"].last_status == LastStatus.OK
    data = ledger()
    assert (data["digests"], data["cleanups"], len(data["reports"])) == (3, 51, 2)

    rehearsal.advance(timedelta(0))
    assert ledger()["digests"] == 3, "three missed digests stayed missed"
    assert len(ledger()["reports"]) == 2, "three missed reports stayed missed"
    assert len(ledger()["reminders"]) == 2, "one-offs that ran did not run again"
    assert Schedule.objects.get(name="digest").missed == 3
    assert Schedule.objects.get(name="report").missed == 3

    rehearsal.advance(DAY)
    assert ledger()["digests"] == 4
    assert ledger()["dues"]["digest"][-1] == utc(2026, 3, 13, 12, 0).isoformat()
    assert ledger()["reports"][-1] == "report for 2026-03-12: 4 posts, 15 comments"
    assert Schedule.objects.get(name="report").last_run.state.data["revision"] == 2

    Schedule.objects.create(
        name="welcome",
        job="content.remind",
        args={"text": "welcome back"},
        at=clock.now() - DAY,
    )
    rehearsal.advance(timedelta(0))
    assert ledger()["reminders"][-1] == "welcome back"
    assert ledger()["dues"]["remind"][-1] == (clock.now() - DAY).isoformat()
    rehearsal.advance(HOUR)
    assert ledger()["reminders"].count("welcome back") == 1

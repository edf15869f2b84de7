"""Tests for ``manage.py runjobs`` (DESIGN §2): its flags, refused with a usage error when
bad, and ``--once``, which fires what is due, runs it and returns.

``call_command`` raises argparse's usage errors as ``CommandError`` (on a real command
line they print the usage and exit 2), so the errors are asserted as ``CommandError``.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_weft.engine.worker.loop import Worker
from django_weft.jobs.context import RunContext
from django_weft.jobs.registry import Job, registry
from django_weft.models import LastStatus, Run, RunStatus, Schedule, WorkerProcess
from django_weft.operations import start
from django_weft.timing import clocks
from django_weft.timing.clocks import SystemClock
from tests.clocks import March7


@pytest.fixture(autouse=True)
def weft_log_level() -> Iterator[None]:
    """runjobs sets the django_weft log level for its process; put it back after each test."""
    logger = logging.getLogger("django_weft")
    level = logger.level
    yield
    logger.setLevel(level)


def runjobs(*argv: str, **options: object) -> str:
    """Run ``manage.py runjobs`` in this process and return what it printed."""
    out = StringIO()
    call_command("runjobs", *argv, stdout=out, stderr=StringIO(), **options)
    return out.getvalue()


# --- bad flags -----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("argv", "named"),
    [
        pytest.param(["--plan", "7x"], ["--plan", '"7x"', "duration"], id="plan-unknown-unit"),
        pytest.param(["--plan", "0h"], ["--plan", '"0h"', "positive"], id="plan-zero"),
        pytest.param(["--plan", "7"], ["--plan", '"7"'], id="plan-no-unit"),
        pytest.param(["--plan=-1d"], ["--plan", '"-1d"'], id="plan-negative"),
        # argparse reads "-1d" after a space as a flag, not as the value of --plan.
        pytest.param(
            ["--plan", "-1d"], ["--plan", "expected one argument"], id="plan-negative-spaced"
        ),
        pytest.param(
            ["--since", "nonsense", "--plan", "1d"],
            ["--since", '"nonsense"', "ISO-8601"],
            id="since-nonsense",
        ),
        pytest.param(["--since", "2026-01-01"], ["--since", "--plan"], id="since-without-plan"),
        pytest.param(
            ["--concurrency", "0"], ["--concurrency", "at least 1", "0"], id="concurrency-zero"
        ),
        pytest.param(["--concurrency", "-3"], ["--concurrency", "-3"], id="concurrency-negative"),
        pytest.param(
            ["--concurrency", "abc"],
            ["--concurrency", '"abc"', "whole number"],
            id="concurrency-abc",
        ),
        pytest.param(
            ["--clock", "no.such.Clock"],
            ["--clock", '"no.such.Clock"', "import"],
            id="clock-missing",
        ),
        pytest.param(["--clock", "nodots"], ["--clock", '"nodots"'], id="clock-not-a-path"),
        pytest.param(
            ["--clock", "django_weft.models.Schedule"],
            ["--clock", '"django_weft.models.Schedule"', "Clock"],
            id="clock-not-a-clock",
        ),
        pytest.param(
            ["--shutdown-grace", "-1"], ["--shutdown-grace", "negative", "-1"], id="grace-negative"
        ),
        pytest.param(
            ["--shutdown-grace", "soon"], ["--shutdown-grace", '"soon"'], id="grace-not-a-number"
        ),
        pytest.param(["--job", "no.such.job"], ["no.such.job", "unknown job"], id="job-unknown"),
        pytest.param(
            ["--job", "tests.noop", "--job", "also.missing"], ["also.missing"], id="job-one-unknown"
        ),
        pytest.param(["--plan"], ["--plan", "expected one argument"], id="plan-without-value"),
        pytest.param(
            ["--schedule", "nightly"], ["--schedule", "--plan"], id="schedule-without-plan"
        ),
        pytest.param(
            ["--plan", "1d", "--schedule", "no such", "--schedule", "other"],
            ["unknown schedule(s): no such, other"],
            id="plan-schedule-unknown",
        ),
        pytest.param(["--bogus"], ["--bogus"], id="unknown-flag"),
    ],
)
def test_runjobs_bad_flag(argv: list[str], named: list[str]) -> None:
    """A bad flag is refused with a CommandError naming the flag and value; nothing runs."""
    with pytest.raises(CommandError) as caught:
        runjobs(*argv)
    for text in named:
        assert text in str(caught.value)
    assert WorkerProcess.objects.count() == 0
    assert Run.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "named"),
    [
        pytest.param({"plan": "7x"}, ["--plan", '"7x"'], id="plan"),
        pytest.param({"plan": "1d", "since": "nonsense"}, ["--since", '"nonsense"'], id="since"),
        pytest.param({"concurrency": 0}, ["--concurrency", "0"], id="concurrency"),
        pytest.param({"clock": "django_weft.models.Schedule"}, ["--clock", "Schedule"], id="clock"),
        pytest.param({"shutdown_grace": -1}, ["--shutdown-grace", "-1"], id="shutdown-grace"),
    ],
)
def test_runjobs_bad_keyword(options: dict[str, object], named: list[str]) -> None:
    """call_command() keywords skip argparse, yet a bad value is refused the same way."""
    with pytest.raises(CommandError) as caught:
        runjobs(**options)
    for text in named:
        assert text in str(caught.value)
    assert WorkerProcess.objects.count() == 0


@pytest.mark.django_db
def test_runjobs_plan_keywords() -> None:
    """call_command("runjobs", plan="1d", since="...") reads the keywords as the flags would."""
    Schedule.objects.create(name="every", job="tests.noop", every=timedelta(hours=6))
    by_keyword = runjobs(plan="1d", since="2026-03-07T00:00Z")
    assert by_keyword == runjobs("--plan", "1d", "--since", "2026-03-07T00:00Z")
    assert by_keyword.splitlines()[0] == "# 4 fires over 1 day from 2026-03-07 00:00 UTC"


@pytest.mark.django_db
def test_runjobs_plan_timedelta_keyword() -> None:
    """call_command("runjobs", plan=timedelta(...)) works too; the header says it in words."""
    Schedule.objects.create(name="every", job="tests.noop", every=timedelta(hours=6))
    out = runjobs(plan=timedelta(hours=36), since="2026-03-07T00:00Z")
    assert out.splitlines()[0] == "# 6 fires over 1 day 12 hours from 2026-03-07 00:00 UTC"


def plan_rows() -> None:
    """Four hourly schedules: two of tests.noop, one of tests.broken, one of them disabled."""
    for name, job, enabled in [
        ("a-noop", "tests.noop", True),
        ("b-noop", "tests.noop", True),
        ("c-broken", "tests.broken", True),
        ("d-off", "tests.noop", False),
    ]:
        Schedule.objects.create(name=name, job=job, every=timedelta(hours=1), enabled=enabled)


def planned_names(*argv: str) -> tuple[str, list[str]]:
    """The header of ``runjobs --plan 3h`` and the schedule name on each line."""
    header, *lines = runjobs("--plan", "3h", "--since", "2026-03-07T00:00Z", *argv).splitlines()
    return header, [line.split("  ")[2] for line in lines]


@pytest.mark.django_db
def test_runjobs_plan_job_filter() -> None:
    """--plan with --job lists only the schedules of those jobs."""
    plan_rows()
    header, names = planned_names("--job", "tests.broken")
    assert header == "# 3 fires over 3 hours from 2026-03-07 00:00 UTC"
    assert names == ["c-broken"] * 3
    _, names = planned_names("--job", "tests.broken", "--job", "tests.noop")
    assert sorted(set(names)) == ["a-noop", "b-noop", "c-broken"]


@pytest.mark.django_db
def test_runjobs_plan_schedule_filter() -> None:
    """--schedule (repeatable) lists only the schedules of those names."""
    plan_rows()
    header, names = planned_names("--schedule", "b-noop", "--schedule", "c-broken")
    assert header == "# 6 fires over 3 hours from 2026-03-07 00:00 UTC"
    assert names == ["b-noop", "c-broken"] * 3


@pytest.mark.django_db
def test_runjobs_plan_job_and_schedule_filters_combine() -> None:
    """With both --job and --schedule, a schedule must pass both."""
    plan_rows()
    _, names = planned_names(
        "--job", "tests.noop", "--schedule", "b-noop", "--schedule", "c-broken"
    )
    assert names == ["b-noop"] * 3


@pytest.mark.django_db
def test_runjobs_plan_schedule_disabled() -> None:
    """A disabled schedule named by --schedule is not refused: the header says it fires nothing."""
    plan_rows()
    header, names = planned_names("--schedule", "d-off", "--schedule", "a-noop")
    assert (
        header
        == "# 3 fires over 3 hours from 2026-03-07 00:00 UTC (disabled, so not listed: d-off)"
    )
    assert names == ["a-noop"] * 3


@pytest.mark.django_db
def test_runjobs_plan_unknown_schedule_one_line() -> None:
    """An unknown --schedule is a one-line error naming it, and nothing is printed."""
    plan_rows()
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(
            "runjobs", "--plan", "1d", "--schedule", "a-noop", "--schedule", "zz", stdout=out
        )
    assert str(caught.value) == "unknown schedule(s): zz"
    assert out.getvalue() == ""


# --- --once --------------------------------------------------------------------------------


def past_one_off(name: str = "catch-up") -> Schedule:
    """A tests.noop one-off due an hour ago, whatever the real time is."""
    return Schedule.objects.create(
        name=name, job="tests.noop", at=datetime.now(UTC) - timedelta(hours=1)
    )


@pytest.mark.django_db(transaction=True)
def test_runjobs_once_driven_clock() -> None:
    """--once with the driven clock fires an overdue one-off once, runs it to done and returns."""
    row = past_one_off()
    runjobs("--once", "--clock", "django_weft.testing.DrivenClock")
    run = Run.objects.get()
    assert run.status == RunStatus.DONE
    assert run.schedule_id == row.pk
    assert run.job == "tests.noop"
    assert run.due == row.at
    row.refresh_from_db()
    assert row.last_status == LastStatus.OK
    assert row.last_run_id == run.pk
    assert row.next_due is None
    worker = WorkerProcess.objects.get()
    assert worker.stopped_at is not None


@pytest.mark.django_db(transaction=True)
def test_runjobs_once_again_fires_nothing() -> None:
    """A second --once does not fire the one-off again: it already ran."""
    past_one_off()
    runjobs("--once", "--clock", "django_weft.testing.DrivenClock")
    runjobs("--once", "--clock", "django_weft.testing.DrivenClock")
    assert Run.objects.count() == 1
    assert WorkerProcess.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_runjobs_once_system_clock() -> None:
    """--once on the default system clock fires the overdue one-off once and returns."""
    past_one_off()
    runjobs("--once")
    assert list(Run.objects.values_list("status", flat=True)) == [RunStatus.DONE]


@pytest.mark.django_db(transaction=True)
def test_runjobs_once_no_schedules() -> None:
    """--once --no-schedules fires no schedule, even a due one."""
    row = past_one_off()
    runjobs("--once", "--no-schedules")
    assert Run.objects.count() == 0
    row.refresh_from_db()
    assert row.last_run_id is None


@pytest.mark.django_db(transaction=True)
def test_runjobs_once_job_filter() -> None:
    """--once --job only executes runs of that job; runs of others stay queued."""
    past_one_off()
    runjobs("--once", "--job", "tests.broken")
    assert list(Run.objects.values_list("job", "status")) == [("tests.noop", RunStatus.QUEUED)]


@pytest.mark.django_db(transaction=True)
def test_runjobs_once_restores_signal_handlers() -> None:
    """--once from call_command leaves SIGTERM and SIGINT as they were before it."""
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    past_one_off()
    runjobs("--once")
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


# --- the process clock -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_runjobs_installs_its_clock_for_the_process() -> None:
    """While runjobs runs, the process reads the clock it loaded (what --http serves and
    code the jobs call read), the worker built without a clock runs on it too, and the
    clock installed before is back after."""
    seen: list[tuple[object, datetime]] = []

    def witness(ctx: RunContext) -> None:
        seen.append((clocks.current_clock(), clocks.now()))

    registered = registry.register(Job(func=witness, name="tests.witness"))
    built: list[Worker] = []
    original = Worker.__init__

    def spy(self: Worker, **kwargs: object) -> None:
        original(self, **kwargs)  # type: ignore[arg-type]
        built.append(self)

    try:
        start(registered)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Worker, "__init__", spy)
            runjobs("--once", "--clock", "tests.clocks.March7")
    finally:
        registry.unregister(registered.name)
    ((read, now),) = seen
    (worker,) = built
    assert isinstance(read, March7)
    assert read is worker.clock, "the worker's clock is the process's"
    assert now == datetime(2026, 3, 7, 11, 0, tzinfo=UTC)
    assert Run.objects.get().started_at == now
    assert type(clocks.current_clock()) is SystemClock, "uninstalled after"

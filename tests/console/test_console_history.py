"""The overview's history (issue 21): ranges of 1 hour to 30 days, split by job or queue,
duration percentiles per job, read from the summary rows the worker counts (and the run
table only for the minutes not counted yet); and the concurrency limits with their use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from django_weft.console.history import SERIES_SHOWN, bar_end, read_history
from django_weft.console.overview import Limit, read_overview
from django_weft.engine.history.tallying import SETTLE, tally
from django_weft.engine.worker.housekeeping import Tallier
from django_weft.jobs.registry import registry
from django_weft.live.changes import Changes
from django_weft.models import DurationTally, Run, RunStatus, RunTally, TallyMark
from django_weft.models.tally import duration_bin
from django_weft.operations import start
from django_weft.timing.durations import BOUNDS, NO_DURATION, bin_of, percentile_top

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 7, 12, 34, 20, tzinfo=UTC)
OVERVIEW = "/admin/django_weft/overview/"


def ended(
    finished: datetime,
    status: str = RunStatus.DONE,
    took: timedelta | None = timedelta(seconds=2),
    job: str = "tests.noop",
    queue: str = "default",
) -> Run:
    run = start(registry.get("tests.noop"))
    Run.objects.filter(pk=run.pk).update(
        job=job,
        queue=queue,
        status=status,
        started_at=finished - took if took is not None else None,
        finished_at=finished,
    )
    return run


def count_everything(now: datetime) -> None:
    while tally(now):
        pass


def figures(now: datetime, span: str, split: str = "all") -> dict[str, Any]:
    history = read_history(now, span, split)
    return {
        "outcomes": {k: v for k, v in history.outcomes.items() if v},
        "bars": {
            (series.key, bucket.start): (bucket.finished, bucket.failed)
            for series in history.series
            for bucket in series.buckets
            if bucket.finished or bucket.failed
        },
        "durations": [(row.job, row.runs, row.percentiles) for row in history.durations],
    }


@pytest.mark.parametrize(
    ("span", "bars", "minutes", "first", "end"),
    [
        ("1h", 60, 1, datetime(2026, 3, 7, 11, 35, tzinfo=UTC), datetime(2026, 3, 7, 12, 35)),
        ("24h", 144, 10, datetime(2026, 3, 6, 12, 40, tzinfo=UTC), datetime(2026, 3, 7, 12, 40)),
        ("7d", 168, 60, datetime(2026, 2, 28, 13, 0, tzinfo=UTC), datetime(2026, 3, 7, 13, 0)),
        ("30d", 120, 360, datetime(2026, 2, 5, 18, 0, tzinfo=UTC), datetime(2026, 3, 7, 18, 0)),
    ],
)
def test_each_range_has_its_bars_on_the_utc_clock(
    span: str, bars: int, minutes: int, first: datetime, end: datetime
) -> None:
    history = read_history(NOW, span, "all")
    (series,) = history.series
    assert len(series.buckets) == bars
    assert {bucket.minutes for bucket in series.buckets} == {minutes}
    assert series.buckets[0].start == first
    assert history.end == end.replace(tzinfo=UTC)


def test_a_run_lands_in_the_bar_of_its_finish_in_every_range() -> None:
    ended(datetime(2026, 3, 7, 12, 25, 40, tzinfo=UTC))
    ended(datetime(2026, 3, 7, 7, 5, tzinfo=UTC), status=RunStatus.FAILED)
    at = {
        "1h": [datetime(2026, 3, 7, 12, 25, tzinfo=UTC)],
        "24h": [datetime(2026, 3, 7, 7, 0, tzinfo=UTC), datetime(2026, 3, 7, 12, 20, tzinfo=UTC)],
        "7d": [datetime(2026, 3, 7, 7, 0, tzinfo=UTC), datetime(2026, 3, 7, 12, 0, tzinfo=UTC)],
        "30d": [datetime(2026, 3, 7, 6, 0, tzinfo=UTC), datetime(2026, 3, 7, 12, 0, tzinfo=UTC)],
    }
    for span, starts in at.items():
        bars = figures(NOW, span)["bars"]
        assert sorted(start for _key, start in bars) == starts, span
    day = figures(NOW, "24h")["bars"]
    assert day[("", datetime(2026, 3, 7, 7, 0, tzinfo=UTC))] == (0, 1)
    assert day[("", datetime(2026, 3, 7, 12, 20, tzinfo=UTC))] == (1, 0)


@pytest.mark.slow
def test_the_history_reads_the_same_once_counted_and_outlives_the_runs() -> None:
    """Counted into summary rows, the figures of every range are what the run table
    gave; then the runs can go (pruned) and the history stays."""
    for days, minute in ((0, 3), (0, 50), (2, 0), (6, 10), (20, 0), (29, 0)):
        finished = NOW - timedelta(days=days, minutes=minute, seconds=7)
        ended(finished, job=f"tests.job{days % 3}", queue=f"q{minute % 2}")
        ended(finished, status=RunStatus.FAILED, took=timedelta(seconds=30))
        ended(finished, status=RunStatus.ABORTED, took=None)
    shapes = [
        (span, split) for span in ("1h", "24h", "7d", "30d") for split in ("all", "job", "queue")
    ]
    before = {shape: figures(NOW, *shape) for shape in shapes}
    count_everything(NOW)
    marks = dict(TallyMark.objects.values_list("minutes", "through"))
    assert marks == {
        1: datetime(2026, 3, 7, 12, 29, tzinfo=UTC),  # NOW - SETTLE
        10: datetime(2026, 3, 7, 12, 20, tzinfo=UTC),
        60: datetime(2026, 3, 7, 12, 0, tzinfo=UTC),
        360: datetime(2026, 3, 7, 12, 0, tzinfo=UTC),
    }
    assert set(RunTally.objects.values_list("minutes", flat=True)) == {1, 10, 60, 360}
    assert {shape: figures(NOW, *shape) for shape in shapes} == before
    # Only the runs of the last, uncounted minutes are still read from the run table.
    Run.objects.filter(finished_at__lt=NOW - SETTLE - timedelta(minutes=1)).delete()
    after = {shape: figures(NOW, *shape) for shape in shapes}
    assert after == before
    assert before[("30d", "all")]["outcomes"] == {"done": 6, "failed": 6, "aborted": 6}


def test_counting_twice_counts_once_and_keeps_each_grain_past_its_range() -> None:
    ended(NOW - timedelta(days=3))
    ended(NOW - timedelta(hours=1))
    count_everything(NOW)
    assert tally(NOW) is False

    def runs(grain: int) -> int:
        return sum(RunTally.objects.filter(minutes=grain).values_list("runs", flat=True))

    assert (runs(360), runs(60)) == (2, 2)
    # Rows of a grain older than the ranges that read it are gone: coarser ones hold them.
    assert (runs(10), runs(1)) == (1, 1)
    assert DurationTally.objects.filter(minutes=360).count() == 2
    assert figures(NOW, "7d")["outcomes"] == {"done": 2}


def test_the_workers_step_counts_a_chunk_a_round_then_rests() -> None:
    ended(NOW - timedelta(hours=3))
    tallier = Tallier()
    rounds = 0
    while tallier.step(NOW, Changes()):
        rounds += 1
    # From 06:00 (the 6-hour bar) an hour a round while runs finished ahead (to 10:00),
    # then the empty rest to 12:29 at once.
    assert rounds == 5
    ended(NOW + timedelta(seconds=10))
    assert tallier.step(NOW + timedelta(seconds=30), Changes()) is False  # resting
    assert tallier.step(NOW + timedelta(minutes=2), Changes()) is True


def test_split_by_job_draws_the_busiest_and_adds_up_the_rest() -> None:
    for number in range(SERIES_SHOWN + 3):
        for _ in range(number + 1):
            ended(NOW - timedelta(minutes=5), job=f"tests.job{number:02d}")
    history = read_history(NOW, "1h", "job")
    keys = [series.key for series in history.series]
    assert len(keys) == SERIES_SHOWN
    assert keys[0] == f"tests.job{SERIES_SHOWN + 2:02d}"
    assert keys[-1] == "others"
    assert history.others == 4
    assert history.series[-1].finished == 1 + 2 + 3 + 4


def test_percentiles_per_job_from_duration_bins() -> None:
    """90 runs of a second and 10 of ten: p50 in the 1-2 s bin, p95 and p99 in 10-20 s;
    aborted runs never started count for nothing."""
    for index in range(100):
        took = timedelta(seconds=1 if index < 90 else 10)
        ended(NOW - timedelta(hours=2, minutes=index % 30), took=took)
    ended(NOW - timedelta(hours=2), status=RunStatus.ABORTED, took=None)
    expected = [("tests.noop", 100, {50: 2, 95: 20, 99: 20})]
    assert figures(NOW, "24h")["durations"] == expected
    count_everything(NOW)
    assert figures(NOW, "24h")["durations"] == expected


def test_the_databases_duration_bin_is_pythons() -> None:
    lengths = [0.004, 0.01, 0.5, 1.999, 2, 59, 3600, 86399, 86400, 200000]
    runs = {ended(NOW, took=timedelta(seconds=s)).pk: s for s in lengths}
    never = ended(NOW, status=RunStatus.ABORTED, took=None).pk
    bins = dict(Run.objects.annotate(bin=duration_bin()).values_list("pk", "bin"))
    assert bins[never] == NO_DURATION
    for pk, seconds in runs.items():
        assert bins[pk] == bin_of(timedelta(seconds=seconds)), seconds
    assert bin_of(timedelta(days=2)) == len(BOUNDS)
    assert percentile_top({len(BOUNDS): 3}, 50) == float("inf")
    assert percentile_top({NO_DURATION: 3}, 50) is None


def test_concurrency_limits_show_each_keys_use() -> None:
    users = [get_user_model().objects.create_user(name) for name in ("ann", "bob")]
    job = registry.get("tests.one_per_owner")
    held = [start(job, {"label": "x"}, owner=user) for user in users]
    Run.objects.filter(pk=held[0].pk).update(status=RunStatus.RUNNING)
    limits = {limit.job: limit for limit in read_overview(NOW).limits}
    assert limits["tests.one_per_owner"] == Limit(
        job="tests.one_per_owner",
        limit=1,
        keyed=True,
        uses=((f"user:{users[0].pk}", 1, 1), (f"user:{users[1].pk}", 1, 0)),
    )
    assert limits["tests.stubborn"] == Limit("tests.stubborn", 1, False, ())
    assert all(registry.get(name).concurrency is not None for name in limits)


def test_the_page_offers_every_range_and_split_and_refuses_others() -> None:
    user = get_user_model().objects.create_user("viewer", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_run"))
    client = Client()
    client.force_login(user)
    ended(datetime.now(UTC) - timedelta(minutes=1), job="tests.noop", queue="cpu")
    page = client.get(OVERVIEW, {"range": "7d", "split": "queue"})
    assert page.status_code == 200
    text = page.content.decode()
    for label in ("1h", "24h", "7d", "30d", "by job", "by queue"):
        assert label in text
    assert 'data-range="7d" data-split="queue"' in text
    assert "live/?range=7d&amp;split=queue" in text
    assert 'data-series="cpu"' in text
    assert 'id="weft-durations"' in text
    assert 'id="weft-limits"' in text
    assert "tests.one_per_owner" in text
    live = client.get(f"{OVERVIEW}live/", {"range": "30d", "split": "job"})
    assert 'data-range="30d" data-split="job"' in live.content.decode()
    for params, named in (({"range": "2d"}, "range"), ({"split": "owner"}, "split")):
        refused = client.get(OVERVIEW, params)
        assert refused.status_code == 400
        assert named in refused.content.decode()
    assert bar_end(NOW, 360) == datetime(2026, 3, 7, 18, 0, tzinfo=UTC)

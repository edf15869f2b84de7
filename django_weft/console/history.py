"""The overview's history: runs finished and failed over 1 hour, 24 hours, 7 days or 30
days, in all or split by job or by queue, and each job's duration percentiles.

Read from the summary rows (:mod:`django_weft.models.tally`) of the range's own grain
(a bar's length), whatever the number of runs stored: one grouped query for the counts,
one for the durations, each a row per bar, key and outcome (or job and bin). The little
the grain has not counted yet comes from the finer grains in the same queries, and the
minutes no grain has counted (the last few, or more while a first count of the history
goes on) from the run table by its ``finished_at`` index, in one more.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, F, Q, Sum, Value
from django.utils.translation import gettext_lazy as _

from django_weft.engine.history.tallying import TIMED
from django_weft.models import DurationTally, Run, RunStatus, RunTally, TallyMark
from django_weft.models.run import UNFINISHED
from django_weft.models.tally import GRAINS, bar_at, bar_of, bar_start, duration_bin
from django_weft.timing.durations import PERCENTILES, percentile_top

#: Outcomes counted as failures on the charts.
FAILURES = (RunStatus.FAILED, RunStatus.LOST)
#: The most charts a split draws; the rest are added up in one more.
SERIES_SHOWN = 8
OTHERS = "others"


@dataclass(frozen=True)
class Span:
    """A range the overview offers: its length and the minutes of each bar."""

    key: str
    length: timedelta
    bar_minutes: int
    label: Any


SPANS = {
    span.key: span
    for span in (
        Span("1h", timedelta(hours=1), 1, _("last hour")),
        Span("24h", timedelta(hours=24), 10, _("last 24 hours")),
        Span("7d", timedelta(days=7), 60, _("last 7 days")),
        Span("30d", timedelta(days=30), 360, _("last 30 days")),
    )
}
DEFAULT_SPAN = "1h"
#: How a chart may be split: not at all, by job, by queue.
SPLITS = {"all": _("all runs"), "job": _("by job"), "queue": _("by queue")}
DEFAULT_SPLIT = "all"


@dataclass(frozen=True)
class Bucket:
    """One bar of a chart: the runs that finished in ``[start, start + minutes)``."""

    start: datetime
    minutes: int
    finished: int
    failed: int

    @property
    def finished_per_minute(self) -> float:
        return self.finished / self.minutes

    @property
    def failed_per_minute(self) -> float:
        return self.failed / self.minutes


@dataclass(frozen=True)
class Series:
    """One chart: the bars of one job, one queue, the others, or all runs (key "")."""

    key: str
    buckets: list[Bucket]

    @property
    def finished(self) -> int:
        return sum(bucket.finished for bucket in self.buckets)

    @property
    def failed(self) -> int:
        return sum(bucket.failed for bucket in self.buckets)


@dataclass(frozen=True)
class Durations:
    """How long one job's runs took over the range: each percentile's bin top, seconds
    (``inf`` past a day, None without a timed run)."""

    job: str
    runs: int
    percentiles: dict[int, float | None]


@dataclass(frozen=True)
class History:
    span: Span
    split: str
    start: datetime
    end: datetime
    series: list[Series]
    #: How many keys the ``others`` chart adds up (0: none).
    others: int
    #: Runs finished over the range, by outcome.
    outcomes: dict[str, int]
    durations: list[Durations]


def bar_end(now: datetime, minutes: int) -> datetime:
    """The end of the bar ``now`` falls in, bars aligned on the UTC clock."""
    return bar_start(now, minutes) + timedelta(minutes=minutes)


def read_history(now: datetime, span_key: str, split: str) -> History:
    """The history of ``span_key`` (a key of :data:`SPANS`) split by ``split`` (a key of
    :data:`SPLITS`), at ``now``; four queries."""
    span = SPANS[span_key]
    end = bar_end(now, span.bar_minutes)
    start = end - span.length
    where, counted = _counted(start, end, span.bar_minutes)
    key = Value("") if split == DEFAULT_SPLIT else F(split)
    bars: Counter[tuple[str, datetime, bool]] = Counter()
    outcomes: Counter[str] = Counter({str(s): 0 for s in RunStatus if s not in UNFINISHED})
    bins: dict[str, Counter[int]] = defaultdict(Counter)

    def add(key: str, at: datetime, status: str, runs: int) -> None:
        bars[(key, bar_start(at, span.bar_minutes), status in FAILURES)] += runs
        outcomes[status] += runs

    tallies = (
        RunTally.objects.filter(where)
        .order_by()
        .annotate(key=key)
        .values("key", "start", "status")
        .annotate(total=Sum("runs"))
    )
    for row in tallies:
        add(row["key"], row["start"], row["status"], row["total"])
    for job, index, runs in (
        DurationTally.objects.filter(where)
        .order_by()
        .values("job", "duration_bin")
        .annotate(total=Sum("runs"))
        .values_list("job", "duration_bin", "total")
    ):
        bins[job][index] += runs
    recent = (
        Run.objects.finished()
        .filter(finished_at__gte=counted, finished_at__lt=end)
        .order_by()
        .annotate(key=key, duration_bin=duration_bin(), **bar_of("finished_at", 1))
        .values("key", "status", "job", "duration_bin", "bar_at", "bar_within")
        .annotate(total=Count("id"))
    )
    for late in recent:
        add(late["key"], bar_at(dict(late), 1), late["status"], late["total"])
        if late["status"] in TIMED:
            bins[late["job"]][late["duration_bin"]] += late["total"]
    series, others = _series(bars, start, span)
    return History(
        span=span,
        split=split,
        start=start,
        end=end,
        series=series,
        others=others,
        outcomes=dict(outcomes),
        durations=[
            Durations(
                job=job,
                runs=sum(runs for index, runs in counts.items() if index >= 0),
                percentiles={p: percentile_top(counts, p) for p in PERCENTILES},
            )
            for job, counts in sorted(bins.items())
        ],
    )


def _counted(start: datetime, end: datetime, grain: int) -> tuple[Q, datetime]:
    """Which summary rows cover ``[start, end)``, and from when on the run table does.

    The range's own grain covers it up to that grain's mark, each finer grain from there
    up to its own mark (never more than a bar of the grain above), and the run table the
    rest: the minutes not counted yet.
    """
    marks = dict(TallyMark.objects.values_list("minutes", "through"))
    where, low = Q(pk__in=[]), start
    for minutes in reversed([g for g in GRAINS if g <= grain]):
        high = min(max(marks.get(minutes, start), low), end)
        if high > low:
            where |= Q(minutes=minutes, start__gte=low, start__lt=high)
        low = high
    return where, low


def _series(
    bars: Counter[tuple[str, datetime, bool]], start: datetime, span: Span
) -> tuple[list[Series], int]:
    """A chart per key, the busiest first, past :data:`SERIES_SHOWN` added up."""
    totals: Counter[str] = Counter()
    for (key, _at, _failed), runs in bars.items():
        totals[key] += runs
    keys = sorted(totals, key=lambda key: (-totals[key], key)) or [""]
    shown, rest = keys[:SERIES_SHOWN], keys[SERIES_SHOWN:]
    if rest:
        shown = keys[: SERIES_SHOWN - 1]
        rest = keys[SERIES_SHOWN - 1 :]
    count = int(span.length / timedelta(minutes=span.bar_minutes))
    starts = [start + timedelta(minutes=index * span.bar_minutes) for index in range(count)]

    def buckets(keys_of: list[str]) -> list[Bucket]:
        return [
            Bucket(
                start=at,
                minutes=span.bar_minutes,
                finished=sum(bars[(key, at, False)] for key in keys_of),
                failed=sum(bars[(key, at, True)] for key in keys_of),
            )
            for at in starts
        ]

    series = [Series(key, buckets([key])) for key in shown]
    if rest:
        series.append(Series(OTHERS, buckets(rest)))
    return series, len(rest)

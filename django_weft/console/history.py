"""The overview's history: runs finished and failed over 1 hour, 24 hours, 7 days or 30
days, in all or split by job or by queue, and each job's duration percentiles.

Read from the summary rows (:class:`~django_weft.models.RunTally`) in two grouped
queries, whatever the number of runs stored: hour rows for a long range, minute rows
for the rest of the counted past; the minutes not counted yet (the last few, or more
while a first count of the history goes on) are read from the run table by its
``finished_at`` index in one more. Bars are grouped by the database, so what comes back
is a row per bar, key and outcome.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Count, Expression, F, Q, Sum, Value
from django.db.models.functions import (
    ExtractHour,
    ExtractMinute,
    Floor,
    TruncDay,
    TruncHour,
    TruncMinute,
)
from django.utils.translation import gettext_lazy as _

from django_weft.models import Run, RunStatus, RunTally, TallyMark
from django_weft.models.tally import HOUR, MINUTE, duration_bin
from django_weft.timing.durations import PERCENTILES, percentile_top

#: Outcomes counted as failures on the charts.
FAILURES = (RunStatus.FAILED, RunStatus.LOST)
#: The outcomes whose durations make the percentiles: runs that ended on their own.
TIMED = (RunStatus.DONE, RunStatus.FAILED)
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
    now = now.astimezone(UTC).replace(second=0, microsecond=0)
    if minutes < 60:
        return now.replace(minute=now.minute - now.minute % minutes) + timedelta(minutes=minutes)
    hours = minutes // 60
    return now.replace(minute=0, hour=now.hour - now.hour % hours) + timedelta(hours=hours)


def read_history(now: datetime, span_key: str, split: str) -> History:
    """The history of ``span_key`` (a key of :data:`SPANS`) split by ``split`` (a key of
    :data:`SPLITS`), at ``now``; three queries."""
    span = SPANS[span_key]
    end = bar_end(now, span.bar_minutes)
    start = end - span.length
    mark = TallyMark.objects.filter(pk=1).values_list("minutes_through", "hours_through").first()
    minutes_through, hours_through = mark if mark is not None else (start, start)
    counted = min(max(minutes_through, start), end)
    if span.bar_minutes >= HOUR:
        hours_to = min(max(hours_through, start), counted)
        where = Q(minutes=HOUR, start__gte=start, start__lt=hours_to) | Q(
            minutes=MINUTE, start__gte=hours_to, start__lt=counted
        )
    else:
        where = Q(minutes=MINUTE, start__gte=start, start__lt=counted)
    key = Value("") if split == DEFAULT_SPLIT else F(split)
    bars: Counter[tuple[str, datetime, bool]] = Counter()
    outcomes: Counter[str] = Counter({str(s): 0 for s in RunStatus if s not in _UNFINISHED})
    bins: dict[str, Counter[int]] = defaultdict(Counter)
    tallies = (
        RunTally.objects.filter(where)
        .order_by()
        .annotate(key=key, **_bar_of("start", span.bar_minutes))
        .values("key", "status", *_BAR_FIELDS)
        .annotate(total=Sum("runs"))
    )
    for row in tallies:
        _add(row, row["total"], span.bar_minutes, bars, outcomes)
    timed = (
        RunTally.objects.filter(where, status__in=TIMED)
        .order_by()
        .values("job", "duration_bin")
        .annotate(total=Sum("runs"))
    )
    for row in timed:
        bins[row["job"]][row["duration_bin"]] += row["total"]
    recent = (
        Run.objects.finished()
        .filter(finished_at__gte=counted, finished_at__lt=end)
        .order_by()
        .annotate(key=key, bin=duration_bin(), **_bar_of("finished_at", span.bar_minutes))
        .values("key", "status", "job", "bin", *_BAR_FIELDS)
        .annotate(total=Count("id"))
    )
    for row in recent:
        _add(row, row["total"], span.bar_minutes, bars, outcomes)
        if row["status"] in TIMED:
            bins[row["job"]][row["bin"]] += row["total"]
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


_UNFINISHED = (RunStatus.QUEUED, RunStatus.RUNNING)
#: The fields a bar is grouped by: a truncated moment and, for bars that split it, the
#: bar within it (a 10-minute bar within its hour, a 6-hour bar within its day).
_BAR_FIELDS = ("bar_at", "bar_within")


def _bar_of(field: str, minutes: int) -> dict[str, Expression]:
    """Group expressions for the bar of ``minutes`` a moment ``field`` falls in."""
    zero: Expression = Value(0)
    if minutes == 1:
        return {"bar_at": TruncMinute(field, tzinfo=UTC), "bar_within": zero}
    if minutes < 60:
        within = Floor(ExtractMinute(field, tzinfo=UTC) / minutes)
        return {"bar_at": TruncHour(field, tzinfo=UTC), "bar_within": within}
    if minutes == 60:
        return {"bar_at": TruncHour(field, tzinfo=UTC), "bar_within": zero}
    within = Floor(ExtractHour(field, tzinfo=UTC) / (minutes // 60))
    return {"bar_at": TruncDay(field, tzinfo=UTC), "bar_within": within}


def _add(
    row: dict[str, Any],
    runs: int,
    minutes: int,
    bars: Counter[tuple[str, datetime, bool]],
    outcomes: Counter[str],
) -> None:
    at = row["bar_at"].astimezone(UTC) + timedelta(minutes=int(row["bar_within"]) * minutes)
    bars[(row["key"], at, row["status"] in FAILURES)] += runs
    outcomes[row["status"]] += runs


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

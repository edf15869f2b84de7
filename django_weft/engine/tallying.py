"""Count finished runs into the overview's history (:class:`~django_weft.models.RunTally`).

Each step counts at most :data:`CHUNK` of settled minutes: the runs that finished in
them, grouped by minute, job, queue, outcome and duration bin, read through the run
table's ``finished_at`` index, so a step costs what those minutes hold, never the table.
Whole hours are then added up from their minute rows into hour rows. A minute is
*settled* :data:`SETTLE` after it ended: a run whose finish commits later than that with
an earlier ``finished_at`` (an outcome written long after an outage) is not counted in
the history, though it is in the run list.

One step is one transaction that first moves the mark with a conditional update: of two
workers that count at once, the one whose update found the mark where it read it counts
those minutes, and the other counts nothing (a lost race, normal).

A first step, on a database whose runs were never counted, starts at the hour of the
oldest finished run of the last :data:`HISTORY`, so an upgrade fills the charts' month
in the background, a chunk a round, beside the runs.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Count, Min, Sum
from django.db.models.functions import TruncHour, TruncMinute

from django_weft.models import Run, RunTally, TallyMark
from django_weft.models.tally import HOUR, MINUTE, duration_bin

logger = logging.getLogger("django_weft.worker")

#: How long after a minute ends its runs are counted.
SETTLE = timedelta(minutes=5)
#: The most minutes one step counts (a backlog is worked through a chunk a round).
CHUNK = timedelta(hours=1)
#: How far back the history reaches, and how long each grain's rows are kept.
HISTORY = timedelta(days=30)
KEEP_MINUTES = timedelta(days=2)
KEEP_HOURS = HISTORY + timedelta(days=2)
#: The key of the one mark row.
MARK = 1


def floor_minute(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(second=0, microsecond=0)


def floor_hour(moment: datetime) -> datetime:
    return floor_minute(moment).replace(minute=0)


def tally(now: datetime) -> bool:
    """Count the next chunk of settled minutes; True if this call counted any."""
    mark = read_mark(now)
    settled = floor_minute(now - SETTLE)
    if mark.minutes_through >= settled:
        return False
    begin, end = mark.minutes_through, min(settled, mark.minutes_through + CHUNK)
    hours_end = floor_hour(end)
    with transaction.atomic():
        won = TallyMark.objects.filter(pk=MARK, minutes_through=begin).update(
            minutes_through=end, hours_through=max(hours_end, mark.hours_through)
        )
        if not won:
            logger.debug("another worker counted the runs from %s", begin.isoformat())
            return False
        RunTally.objects.bulk_create(_minute_rows(begin, end), batch_size=1000)
        if hours_end > mark.hours_through:
            RunTally.objects.bulk_create(_hour_rows(mark.hours_through, hours_end), batch_size=1000)
        RunTally.objects.filter(minutes=MINUTE, start__lt=end - KEEP_MINUTES).delete()
        RunTally.objects.filter(minutes=HOUR, start__lt=hours_end - KEEP_HOURS).delete()
    return True


def read_mark(now: datetime) -> TallyMark:
    """The mark, made on first use at the hour of the oldest finished run of the last
    :data:`HISTORY` (or this hour, with none)."""
    mark = TallyMark.objects.filter(pk=MARK).first()
    if mark is not None:
        return mark
    oldest = Run.objects.filter(finished_at__isnull=False).aggregate(first=Min("finished_at"))
    first = oldest["first"] if oldest["first"] is not None else now
    begin = floor_hour(max(first, now - HISTORY))
    try:
        with transaction.atomic():
            return TallyMark.objects.create(pk=MARK, minutes_through=begin, hours_through=begin)
    except IntegrityError:
        return TallyMark.objects.get(pk=MARK)  # another worker made it first


def _minute_rows(begin: datetime, end: datetime) -> list[RunTally]:
    rows = (
        Run.objects.finished()
        .filter(finished_at__gte=begin, finished_at__lt=end)
        .order_by()
        .annotate(minute=TruncMinute("finished_at", tzinfo=UTC), bin=duration_bin())
        .values("minute", "job", "queue", "status", "bin")
        .annotate(runs=Count("id"))
    )
    return [
        RunTally(
            start=row["minute"],
            minutes=MINUTE,
            job=row["job"],
            queue=row["queue"],
            status=row["status"],
            duration_bin=row["bin"],
            runs=row["runs"],
        )
        for row in rows
    ]


def _hour_rows(begin: datetime, end: datetime) -> list[RunTally]:
    rows = (
        RunTally.objects.filter(minutes=MINUTE, start__gte=begin, start__lt=end)
        .order_by()
        .annotate(hour=TruncHour("start", tzinfo=UTC))
        .values("hour", "job", "queue", "status", "duration_bin")
        .annotate(total=Sum("runs"))
    )
    return [
        RunTally(
            start=row["hour"],
            minutes=HOUR,
            job=row["job"],
            queue=row["queue"],
            status=row["status"],
            duration_bin=row["duration_bin"],
            runs=row["total"],
        )
        for row in rows
    ]

"""Count finished runs into the overview's history (:mod:`django_weft.models.tally`).

Each step counts at most :data:`CHUNK` of settled minutes (all of them at once when no
run finished in them, so an idle worker is caught up in one step): the runs that finished in
them, grouped by minute, job, queue and outcome (and by minute, job and duration bin),
read through the run table's ``finished_at`` index, so a step costs what those minutes
hold, never the table. Each coarser grain's complete bars are then added up from the
grain below (10 minutes from minutes, hours from 10 minutes, 6 hours from hours). A
minute is *settled* :data:`SETTLE` after it ended: a run whose finish commits later
than that with an earlier ``finished_at`` (an outcome written long after an outage) is
not counted in the history, though it is in the run list.

One step is one transaction that first moves the minute mark with a conditional
update: of two workers that count at once, the one whose update found the mark where it
read it counts those minutes, and the other counts nothing (a lost race, normal).

A first step, on a database whose runs were never counted, starts at the 6-hour bar of
the oldest finished run of the last :data:`HISTORY`, so an upgrade fills the charts'
month in the background, a chunk a round, beside the runs.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from django.db import IntegrityError, models, transaction
from django.db.models import Count, Min, Sum

from django_weft.models import DurationTally, Run, RunStatus, RunTally, TallyMark
from django_weft.models.tally import GRAINS, bar_at, bar_of, bar_start, duration_bin

logger = logging.getLogger("django_weft.worker")

#: How long after a minute ends its runs are counted.
SETTLE = timedelta(minutes=5)
#: The most minutes one step counts (a backlog is worked through a chunk a round).
CHUNK = timedelta(hours=1)
#: How far back the history reaches.
HISTORY = timedelta(days=30)
#: How long each grain's rows are kept: past the longest range that reads them.
KEEP = {
    1: timedelta(hours=3),
    10: timedelta(days=2),
    60: timedelta(days=8),
    360: HISTORY + timedelta(days=2),
}
#: The outcomes whose durations are counted: runs that ended on their own.
TIMED = (RunStatus.DONE, RunStatus.FAILED)

_COUNTED: tuple[tuple[type[models.Model], tuple[str, ...]], ...] = (
    (RunTally, ("job", "queue", "status")),
    (DurationTally, ("job", "duration_bin")),
)


def tally(now: datetime) -> bool:
    """Count the next chunk of settled minutes; True if this call counted any."""
    marks = read_marks(now)
    settled = bar_start(now - SETTLE, 1)
    begin = marks[1]
    if begin >= settled:
        return False
    end = min(settled, begin + CHUNK)
    if not Run.objects.filter(finished_at__gte=begin, finished_at__lt=settled).exists():
        end = settled  # nothing finished since the mark: no chunk to work through
    with transaction.atomic():
        won = TallyMark.objects.filter(minutes=1, through=begin).update(through=end)
        if not won:
            logger.debug("another worker counted the runs from %s", begin.isoformat())
            return False
        _count_minutes(begin, end)
        finer_through = end
        for finer, grain in pairwise(GRAINS):
            through = bar_start(finer_through, grain)
            if through > marks[grain]:
                TallyMark.objects.filter(minutes=grain).update(through=through)
                _add_up(finer, grain, marks[grain], through)
            finer_through = max(through, marks[grain])
        for model, _fields in _COUNTED:
            for grain, keep in KEEP.items():
                model._default_manager.filter(minutes=grain, start__lt=end - keep).delete()
    return True


def read_marks(now: datetime) -> dict[int, datetime]:
    """Each grain's mark, made on first use at the 6-hour bar of the oldest finished run
    of the last :data:`HISTORY` (or of now, with none)."""
    marks = dict(TallyMark.objects.values_list("minutes", "through"))
    if len(marks) == len(GRAINS):
        return marks
    oldest = Run.objects.filter(finished_at__isnull=False).aggregate(first=Min("finished_at"))
    first = oldest["first"] if oldest["first"] is not None else now
    begin = bar_start(max(first, now - HISTORY), GRAINS[-1])
    try:
        with transaction.atomic():
            TallyMark.objects.bulk_create(
                [TallyMark(minutes=grain, through=begin) for grain in GRAINS if grain not in marks]
            )
    except IntegrityError:
        pass  # another worker made them first
    return dict(TallyMark.objects.values_list("minutes", "through"))


def _count_minutes(begin: datetime, end: datetime) -> None:
    bar = bar_of("finished_at", 1)
    finished = (
        Run.objects.finished()
        .filter(finished_at__gte=begin, finished_at__lt=end)
        .order_by()
        .annotate(bar_at=bar["bar_at"], bar_within=bar["bar_within"])
    )
    counts = finished.values("bar_at", "bar_within", "job", "queue", "status").annotate(
        total=Count("id")
    )
    timed = (
        finished.filter(status__in=TIMED)
        .annotate(duration_bin=duration_bin())
        .values("bar_at", "bar_within", "job", "duration_bin")
        .annotate(total=Count("id"))
    )
    _write(RunTally, ("job", "queue", "status"), 1, counts)
    _write(DurationTally, ("job", "duration_bin"), 1, timed)


def _add_up(finer: int, grain: int, begin: datetime, end: datetime) -> None:
    """The bars of ``grain`` in ``[begin, end)``, added up from the rows of ``finer``."""
    for model, fields in _COUNTED:
        rows = (
            model._default_manager.filter(minutes=finer, start__gte=begin, start__lt=end)
            .order_by()
            .annotate(**bar_of("start", grain))
            .values("bar_at", "bar_within", *fields)
            .annotate(total=Sum("runs"))
        )
        _write(model, fields, grain, rows)


def _write(model: type[models.Model], fields: tuple[str, ...], grain: int, rows: Any) -> None:
    model._default_manager.bulk_create(
        [
            model(
                start=bar_at(row, grain),
                minutes=grain,
                runs=row["total"],
                **{name: row[name] for name in fields},
            )
            for row in rows
        ],
        batch_size=1000,
    )

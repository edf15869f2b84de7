"""How long runs took, kept as counts per duration bin, and percentiles read from them.

A percentile of many runs cannot be added up from the percentiles of their hours, but
counts per bin can: the overview's history stores, for each minute and job, how many
runs took how long in these bins (:data:`BOUNDS`, a 1-2-5 series from 10 ms to a day,
so each bin's top is at most 2.5 times its bottom), and reads any range's percentiles
by adding the bins up. A percentile is reported as the top of the bin it falls in: "p95
≤ 2 s" is exact about what it claims.

Pure: no database, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

#: The upper bounds of the bins, in seconds; bin ``i`` holds durations in
#: ``[BOUNDS[i-1], BOUNDS[i])``, and the bin past the last, everything from a day up.
BOUNDS: tuple[float, ...] = (
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1,
    2,
    5,
    10,
    20,
    30,
    60,
    120,
    300,
    600,
    1200,
    1800,
    3600,
    7200,
    18000,
    36000,
    86400,
)
#: The bin of a run that never started (aborted while queued): no duration.
NO_DURATION = -1
#: The percentiles the overview shows.
PERCENTILES = (50, 95, 99)


def bin_of(duration: timedelta | None) -> int:
    """The bin ``duration`` falls in; :data:`NO_DURATION` for none."""
    if duration is None:
        return NO_DURATION
    seconds = duration.total_seconds()
    return next((index for index, top in enumerate(BOUNDS) if seconds < top), len(BOUNDS))


def percentile_top(bins: Mapping[int, int], percent: float) -> float | None:
    """The top of the bin holding the ``percent``-th percentile of the counted runs, in
    seconds; ``inf`` when it is the open bin past a day; None without a counted run."""
    counted = sorted((index, runs) for index, runs in bins.items() if index != NO_DURATION)
    total = sum(runs for _, runs in counted)
    if not total:
        return None
    wanted, seen = total * percent / 100, 0
    for index, runs in counted:
        seen += runs
        if seen >= wanted:
            return BOUNDS[index] if index < len(BOUNDS) else float("inf")
    return float("inf")

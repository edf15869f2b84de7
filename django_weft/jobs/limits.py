"""Flow limits a job declares in code: the defaults of its
:class:`~django_weft.models.FlowLimit` rows.

::

    @job(
        "partners.sync",
        concurrency_key=lambda args, owner: args["tenant"],
        limits=[
            Limit(concurrency=5, per_key=True),
            Limit("partner-api", rate=10, per=timedelta(seconds=1)),
        ],
    )

A worker writes each declared limit that has no row of its name yet when it starts; the
row, once written, is what holds (an operator's edit is never undone by a deploy).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

#: What a limit's name may be: it names the limit in URLs, metrics' labels and reasons.
LIMIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,99}$")


@dataclass(frozen=True)
class Limit:
    """At most ``concurrency`` runs of the job running at once, and at most ``rate``
    beginning in any period ``per``, across every worker; with ``per_key``, for each
    key of the job's ``concurrency_key`` separately. ``name`` (default: the job's name)
    names the row. A run over a limit stays queued until it allows the run."""

    name: str = ""
    concurrency: int | None = None
    rate: int | None = None
    per: timedelta | None = None
    per_key: bool = False

    def __post_init__(self) -> None:
        if self.concurrency is None and self.rate is None:
            raise ValueError("a limit needs a concurrency, a rate, or both")
        if self.concurrency is not None and (
            not isinstance(self.concurrency, int) or self.concurrency < 1
        ):
            raise ValueError(
                f"concurrency must be a positive number of runs, not {self.concurrency!r}"
            )
        if (self.rate is None) != (self.per is None):
            raise ValueError("a rate needs its period (per=timedelta(...)), and a period its rate")
        if self.rate is not None and (not isinstance(self.rate, int) or self.rate < 1):
            raise ValueError(f"rate must be a positive number of runs, not {self.rate!r}")
        if self.per is not None and self.per <= timedelta(0):
            raise ValueError(f"per must be a positive period, not {self.per!r}")
        if self.name and not LIMIT_NAME.match(self.name):
            raise ValueError(
                "a limit's name is a letter, digit or _, then up to 99 of those or . : -, "
                f"not {self.name!r}"
            )


def named_limits(job_name: str, limits: Sequence[Limit], keyed: bool) -> tuple[Limit, ...]:
    """``limits`` with each one's name given (the job's name for an unnamed one), checked:
    names differ, and a limit per key belongs to a job with a ``concurrency_key``."""
    named = []
    for limit in limits:
        if limit.per_key and not keyed:
            raise ValueError(f"job {job_name!r}: a limit per key needs a concurrency_key function")
        named.append(limit if limit.name else replace(limit, name=job_name[:100]))
    names = [limit.name for limit in named]
    if len(set(names)) != len(names):
        raise ValueError(f"job {job_name!r}: two limits named alike; give each a name")
    return tuple(named)

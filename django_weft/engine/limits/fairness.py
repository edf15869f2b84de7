"""Fair share: the runs of a queue take turns between keys, decided when they start.

A run started in a queue that a flow limit with ``fair_share`` names is given its turn
(``Run.turn_at``) on the queue's clock, and the claim orders by that turn in place of the
moment the run was started:

- the queue's clock stands at the first turn among its queued runs (what it serves
  next); a key with nothing queued comes in there, at the front;
- a key's next run comes a step after the turn of its last queued run, the step being
  :data:`STEP` divided by the key's weight.

With one key's 100,000 runs queued and another key's ten started after them, the ten's
turns fall between the first key's from the front on: round robin, one run of each key
a round (three of a key of weight 3). This is start-time fair queueing; the claim pays
nothing for it, since it walks its one index in its one order, and a start in a fair
queue pays two index lookups. Priorities come before turns in that order, so a key's
urgent run still goes before the rest. Two starts of one key at the same moment may be
given the same turn; the one started first is then claimed first.

Beside the runs of other queues a worker serves, a fair queue's run counts as started
at its turn: each key of a fair queue as if its runs were started :data:`STEP` apart.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import cache, partial

from django.db import connection
from django.db.models import Min

from django_weft.engine.database import sql
from django_weft.models import FlowLimit, Run, RunStatus

#: How far apart a key's turns are at weight 1.
STEP = timedelta(seconds=1)

#: Keys looked up in one statement.
KEYS_A_STATEMENT = 500


#: How long this process trusts the fair shares it read, in seconds of the real clock.
REREAD = 1.0


def place(runs: Sequence[Run]) -> None:
    """Give each of the new ``runs`` that starts in a fair queue its turn, in the order
    given, before they are written."""
    shares = _shares.read()
    for queue in sorted({run.queue for run in runs} & set(shares)):
        _place_in(shares[queue], [run for run in runs if run.queue == queue])


def forget() -> None:
    """Read the fair shares again at this process's next start (a change made here)."""
    _shares.forget()


class _Shares:
    """The fair shares as this process last read them, trusted for :data:`REREAD`: a
    start would otherwise pay a query for them every time (a fifth of a plain start on
    PostgreSQL). A change made in another process reaches this one's starts within that
    second; one made here (through the service layer) at once."""

    def __init__(self) -> None:
        self._read_at: float | None = None
        self._by_queue: dict[str, FlowLimit] = {}

    def read(self) -> dict[str, FlowLimit]:
        moment = time.monotonic()
        if self._read_at is None or not 0 <= moment - self._read_at < REREAD:
            self._by_queue = {
                share.queue: share for share in FlowLimit.objects.filter(fair_share=True)
            }
            self._read_at = moment
        return self._by_queue

    def forget(self) -> None:
        self._read_at = None


_shares = _Shares()


def weight(share: FlowLimit, key: str) -> int:
    """The weight of ``key`` in ``share`` (1 unless named): a dict of whole numbers from
    1 to 1000, as :mod:`~django_weft.engine.limits.saving` lets a row be saved."""
    weights: dict[str, int] = share.weights
    return weights.get(key, 1)


def _place_in(share: FlowLimit, runs: Sequence[Run]) -> None:
    queued = Run.objects.filter(queue=share.queue, status=RunStatus.QUEUED, turn_at__isnull=False)
    front: datetime | None = queued.aggregate(front=Min("turn_at"))["front"]
    last = _last_turns(share.queue, sorted({run.concurrency_key for run in runs}))
    for run in runs:
        key = run.concurrency_key
        previous = last.get(key)
        if previous is not None:
            turn = previous + STEP / weight(share, key)
        else:
            turn = front if front is not None else (run.run_after or run.created_at)
        run.turn_at = last[key] = turn


def _last_turns(queue: str, keys: Sequence[str]) -> dict[str, datetime]:
    """Each of ``keys``' last turn among the queued runs of ``queue`` (none: left out).

    One lookup a key, each the newest end of the index over the key's turns (a
    ``GROUP BY`` would read every turn of a key with a large backlog)."""
    found: dict[str, datetime] = {}
    with connection.cursor() as cursor:
        for first in range(0, len(keys), KEYS_A_STATEMENT):
            wanted, params = sql.values_list(
                Run, ["concurrency_key"], [(key,) for key in keys[first : first + KEYS_A_STATEMENT]]
            )
            cursor.execute(_last_turns_sql(wanted), [queue, *params])
            for key, turn in cursor.fetchall():
                if turn is not None:
                    found[key] = sql.from_db(Run, "turn_at", turn)
    return found


@cache
def _last_turns_sql(wanted: str) -> str:
    """The lookup of :func:`_last_turns` for the keys of the ``VALUES`` list ``wanted``."""
    column = partial(sql.column, Run)
    return (
        f"SELECT wanted.column1, (SELECT MAX({column('turn_at')}) FROM {sql.table(Run)} "
        f"WHERE {column('queue')} = %s AND {column('status')} = '{RunStatus.QUEUED}' "
        f"AND {column('turn_at')} IS NOT NULL "
        f"AND {column('concurrency_key')} = wanted.column1) FROM ({wanted}) AS wanted"
    )

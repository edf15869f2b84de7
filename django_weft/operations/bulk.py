"""Retry, abort or delete many runs at once: the selected ones, or all that match a filter.

Each run is done through the same checked call a single run goes through
(:func:`retry_for`, :func:`abort_for`, :func:`delete_run_for`), so its permission and
state are judged for the acting user one run at a time, and each one is on record. A
run that is refused is counted with the reason, and the others go on: a bulk action is
never refused as a whole for one run. Each run is done entirely or not at all (a
savepoint of its own).

Runs chosen by a filter are narrowed first to those the user may act on, as a filter of
the query (the rules of :mod:`django_weft.access`, in their queryset form): the others
are counted as refused in one query, never read, so a refusal costs what the user may
touch, not the size of the run table. A filter matching more than
:data:`MAX_FILTER_RUNS` runs is refused as a whole, naming that limit, before anything
is done.

The runs are handled in batches of ``WEFT_BULK_BATCH_SIZE``, each its own transaction,
so ten thousand matching runs are not one long lock; a batch commits before the next is
read. Runs of a filter are read in id order, each batch after the last id of the one
before, so no run is handled twice, and the runs a bulk retry starts are never retried
by the same call.

Where the selection comes from is the entry point's: the ids a client sent
(:func:`parse_ids`), or the run list's own filter, as the console's run list and the
API's run list parse it, handed over as a queryset.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils.translation import gettext, ngettext

from django_weft import access
from django_weft.access import User
from django_weft.conf import weft_settings
from django_weft.exceptions import RunNotFound
from django_weft.models import Run
from django_weft.operations.refusals import REFUSALS, describe_refusal
from django_weft.operations.runs import abort_for, delete_run_for, retry_for

#: The most run ids one bulk request may name; more is refused (use a filter instead).
MAX_IDS = 1000

#: The most runs one bulk action by filter takes: a filter matching more is refused,
#: naming this, and nothing is done. It bounds what one request may cost: counting the
#: matches reads at most one run more than this.
MAX_FILTER_RUNS = 10_000

#: What a bulk action does to one run, as the checked call for a single run does it.
ACTIONS: dict[str, Callable[[User, Run], Any]] = {
    "retry": retry_for,
    "abort": abort_for,
    "delete": delete_run_for,
}

#: The reason code of an abort asked of a run whose abort was requested already.
ALREADY_REQUESTED = "already_requested"


@dataclass
class Reason:
    """Why some runs were refused: how many, and the words of the first refusal."""

    count: int
    detail: str


@dataclass
class BulkResult:
    """What a bulk action did: runs done, runs refused (by reason code), batches committed.

    ``started`` holds the ids of the runs a bulk retry started, in the order it started them.
    """

    action: str
    done: int = 0
    refused: int = 0
    batches: int = 0
    reasons: dict[str, Reason] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)

    def refuse(self, code: str, detail: str, count: int = 1) -> None:
        self.refused += count
        if code in self.reasons:
            self.reasons[code].count += count
        else:
            self.reasons[code] = Reason(count, detail)

    def summary(self) -> str:
        """One sentence for a person: how many were done, how many refused and why
        (each reason's count and code, and the words of its first refusal)."""
        done = _DONE[self.action](self.done) % {"count": self.done}
        if not self.refused:
            return f"{done}."
        why = ", ".join(
            f"{reason.count} {code} ({reason.detail})" for code, reason in self.reasons.items()
        )
        refused = gettext("%(count)d refused: %(why)s") % {"count": self.refused, "why": why}
        return f"{done}; {refused}."


#: How a person is told how many runs an action did.
_DONE: dict[str, Callable[[int], str]] = {
    "retry": lambda count: ngettext("Retried %(count)d run", "Retried %(count)d runs", count),
    "abort": lambda count: ngettext(
        "Abort requested for %(count)d run", "Abort requested for %(count)d runs", count
    ),
    "delete": lambda count: ngettext("Deleted %(count)d run", "Deleted %(count)d runs", count),
}


def parse_action(name: object) -> str:
    """``name`` if it is a bulk action (``retry``, ``abort``, ``delete``); else a
    ``ValidationError`` on ``action`` naming it and what is accepted."""
    if isinstance(name, str) and name in ACTIONS:
        return name
    raise ValidationError(
        {
            "action": [
                gettext("Unknown bulk action %(name)r; use one of: %(known)s.")
                % {"name": name, "known": ", ".join(ACTIONS)}
            ]
        }
    )


def parse_ids(value: object, *, name: str = "ids") -> list[uuid.UUID]:
    """The run ids a client sent: a non-empty list of at most :data:`MAX_IDS` run ids.

    Raises ``ValidationError`` on ``name`` saying what is wrong (not a list, empty, too
    long, which items are not run ids); a repeated id counts once.
    """
    if not isinstance(value, list):
        problem = gettext("Expected a list of run ids, not %(type)s.") % {
            "type": type(value).__name__
        }
        raise ValidationError({name: [problem]})
    if not value:
        raise ValidationError({name: [gettext("Name at least one run id.")]})
    if len(value) > MAX_IDS:
        raise ValidationError(
            {
                name: [
                    gettext(
                        "At most %(most)d run ids at once, not %(given)d; use a filter for more."
                    )
                    % {"most": MAX_IDS, "given": len(value)}
                ]
            }
        )
    ids: dict[uuid.UUID, None] = {}
    bad = []
    for position, item in enumerate(value):
        try:
            ids[uuid.UUID(item)] = None
        except (TypeError, ValueError, AttributeError):
            bad.append(f"{position}: {item!r}")
    if bad:
        problem = gettext("Not run ids (position: value): %(bad)s.") % {"bad": ", ".join(bad)}
        raise ValidationError({name: [problem]})
    return list(ids)


def bulk_for(
    user: User,
    action: str,
    *,
    ids: Sequence[uuid.UUID] | None = None,
    matching: QuerySet[Run] | None = None,
) -> BulkResult:
    """Do ``action`` (see :data:`ACTIONS`) as ``user`` to the runs ``ids`` names, or to
    every run of ``matching`` (the run list's filtered queryset): exactly one of them.

    An id no run has is refused as ``not_found``. The runs of ``matching`` that ``user``
    may not act on are refused as ``forbidden`` without being read; more than
    :data:`MAX_FILTER_RUNS` of them is a ``ValidationError`` naming that limit, and
    nothing is done. Returns what was done and refused.
    """
    act = ACTIONS[parse_action(action)]
    if (ids is None) == (matching is None):
        raise ValueError("bulk_for() takes either ids or matching, not both nor neither")
    result = BulkResult(action)
    if ids is not None:
        batches = _batches_of_ids(ids, result)
    else:
        assert matching is not None
        batches = _batches_matching(_may_act_on(user, action, matching, result), result)
    for batch in batches:
        with transaction.atomic():
            for run in batch:
                _do(act, user, run, result)
        result.batches += 1
    return result


def _do(act: Callable[[User, Run], Any], user: User, run: Run, result: BulkResult) -> None:
    """``act`` on one run, all of it or nothing, its refusal counted."""
    try:
        with transaction.atomic():
            outcome = act(user, run)
    except REFUSALS as refusal:
        code, message, _ = describe_refusal(refusal)
        result.refuse(code, message)
        return
    if outcome is False:  # an abort requested before, and still standing
        result.refuse(
            ALREADY_REQUESTED,
            gettext("an abort of run %(id)s was requested already") % {"id": run.pk},
        )
        return
    if isinstance(outcome, Run):
        result.started.append(str(outcome.pk))
    result.done += 1


def _batches_of_ids(ids: Sequence[uuid.UUID], result: BulkResult) -> Iterator[list[Run]]:
    size = weft_settings.BULK_BATCH_SIZE
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        found = Run.objects.select_related("owner", "schedule").in_bulk(chunk)
        for run_id in chunk:
            if run_id not in found:
                result.refuse("not_found", str(RunNotFound(run_id)))
        yield [found[run_id] for run_id in chunk if run_id in found]


def _may_act_on(
    user: User, action: str, matching: QuerySet[Run], result: BulkResult
) -> QuerySet[Run]:
    """The runs of ``matching`` that ``user`` may do ``action`` to, as a filter of the
    query (the rules of :mod:`django_weft.access` its checked call applies); the others
    are counted as refused. Two queries at most, each reading at most
    :data:`MAX_FILTER_RUNS` + 1 rows; a ``ValidationError`` when more runs than that match.
    """
    allowed, refusal = _narrowed(user, action, matching)
    found = _count_up_to(matching, MAX_FILTER_RUNS + 1)
    if found > MAX_FILTER_RUNS:
        raise ValidationError(
            gettext(
                "This filter matches more than %(most)d runs, the most one bulk action by "
                "filter takes; narrow the filter (by status, job, owner or time) and repeat "
                "it, or name the runs by id."
            )
            % {"most": MAX_FILTER_RUNS},
            code="too_many_runs",
        )
    kept = _count_up_to(allowed, found) if found else 0
    if found > kept:
        result.refuse("forbidden", refusal, found - kept)
    return allowed if kept else allowed.none()


def _narrowed(user: User, action: str, runs: QuerySet[Run]) -> tuple[QuerySet[Run], str]:
    """The runs of ``runs`` ``user`` may do ``action`` to, and the refusal of the others."""
    if action == "retry":
        if not access.may_start_runs(user):
            return runs.none(), access.refusal(gettext("retry runs"), access.ADD_RUN)
        verb, permission = gettext("retry runs that are not yours"), access.VIEW_RUN
        return access.runs_seen_in_full(user, runs), access.refusal(verb, permission)
    if action == "abort":
        verb, permission = gettext("abort runs that are not yours"), access.CHANGE_RUN
        return access.abortable_runs(user, runs), access.refusal(verb, permission)
    verb, permission = gettext("delete runs that are not yours"), access.DELETE_RUN
    return access.deletable_runs(user, runs), access.refusal(verb, permission)


def _count_up_to(runs: QuerySet[Run], most: int) -> int:
    """How many runs ``runs`` holds, counted up to ``most``: one query that reads at
    most ``most`` ids (none for a queryset known to be empty)."""
    return runs.order_by().values("pk")[:most].count()


def _batches_matching(matching: QuerySet[Run], result: BulkResult) -> Iterator[list[Run]]:
    """The runs of ``matching`` in id order, a batch at a time, read after the one before
    committed, :data:`MAX_FILTER_RUNS` at most; without the runs this call started (a
    retry's new run may match too)."""
    size = weft_settings.BULK_BATCH_SIZE
    ordered = matching.select_related("owner", "schedule").order_by("pk")
    after: uuid.UUID | None = None
    started: set[str] = set()
    left = MAX_FILTER_RUNS
    while left > 0:
        page = ordered if after is None else ordered.filter(pk__gt=after)
        batch = list(page[: min(size, left)])
        if not batch:
            return
        after, left = batch[-1].pk, left - len(batch)
        started.update(result.started[len(started) :])
        yield [run for run in batch if str(run.pk) not in started]

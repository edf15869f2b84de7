"""What the console's pages show: template contexts built from the overview and a run.

The page views (:mod:`django_weft.console.runs`, :mod:`django_weft.console.overview_page`)
check nothing themselves and decide nothing: they hand the request's user here, and
what a user sees of a run is the view :mod:`django_weft.access` gives them (the guest
view leaves out args their job marks private, the output, the result and the errors).
Actions go through :mod:`django_weft.operations`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any
from urllib.parse import urlencode

from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from django_weft import access
from django_weft.access import User
from django_weft.console.ansi import to_html
from django_weft.console.charts import bar_chart
from django_weft.console.formatting import (
    duration,
    length_html,
    moment,
    pretty_json,
    short_id,
    zone_name,
)
from django_weft.console.history import (
    DEFAULT_SPAN,
    DEFAULT_SPLIT,
    OTHERS,
    SPANS,
    SPLITS,
)
from django_weft.console.overview import read_overview
from django_weft.console.stalls import stalls
from django_weft.engine.limits.reasons import Hold, holds
from django_weft.jobs.output import output_in
from django_weft.live import projections
from django_weft.models import Attempt, Group, Run, RunStatus
from django_weft.timing.durations import PERCENTILES


def overview_context(
    user: User, now: datetime, zone: tzinfo, span: str = DEFAULT_SPAN, split: str = DEFAULT_SPLIT
) -> dict[str, Any]:
    """The overview at ``now``, its moments on the wall clock of ``zone``, its history
    over ``span`` split by ``split`` (checked by the caller: keys of ``SPANS``/``SPLITS``)."""
    overview = read_overview(now, span, split)
    history = overview.history
    chosen = history.span
    per = (
        _("a minute")
        if chosen.bar_minutes == 1
        else _("a minute, averaged over %(minutes)s-minute bars") % {"minutes": chosen.bar_minutes}
    )
    charts = [
        {
            "key": series.key,
            "name": _series_name(series.key, history.others),
            "finished": series.finished,
            "failed": series.failed,
            "chart": bar_chart(
                _("Runs finished and failed %(per)s, %(span)s%(of)s")
                % {
                    "per": per,
                    "span": chosen.label,
                    "of": f" ({_series_name(series.key, history.others)})" if series.key else "",
                },
                series.buckets,
                zone,
            ),
        }
        for series in history.series
    ]
    return {
        "overview": overview,
        "history": history,
        "charts": charts,
        "per": per,
        "spans": [(key, span_.label, key == span) for key, span_ in SPANS.items()],
        "splits": [(key, label, key == split) for key, label in SPLITS.items()],
        "history_query": urlencode({"range": span, "split": split}),
        "durations": [
            {
                "job": row.job,
                "runs": row.runs,
                "percentiles": [bin_top(row.percentiles[p]) for p in PERCENTILES],
            }
            for row in history.durations
        ],
        "percentiles": [f"p{p}" for p in PERCENTILES],
        "now_text": moment(overview.now, zone),
        # A coming fire is printed in this zone; in its schedule's own too if that differs.
        "zone_name": zone_name(zone),
        "can_pause": user.has_perm(access.PAUSE_QUEUE),
        # A queue without a limit of its own links to a new one's form for those who
        # may add it (the form's save is the service layer's check).
        "can_limit": user.has_perm(access.ADD_LIMIT),
    }


def _series_name(key: str, others: int) -> str:
    if key == OTHERS and others:
        return str(_("%(count)s others") % {"count": others})
    return key


def bin_top(seconds: float | None) -> str:
    """A percentile as the top of its duration bin: ``≤ 200 ms``, ``≤ 5.00 s``, ``> 1 d``."""
    if seconds is None:
        return "-"
    if seconds == float("inf"):
        return str(_("over a day"))
    if seconds < 1:
        return f"≤ {seconds * 1000:.0f} ms"
    return f"≤ {duration(timedelta(seconds=seconds))}"


@dataclass(frozen=True)
class AttemptView:
    """One attempt of a run as the page lists it, the latest last."""

    number: int
    status: str
    started: str
    ended: str
    #: HTML: a span that ticks while the attempt runs (:func:`formatting.length_html`).
    length: SafeString
    worker: str
    error_type: str
    error_message: str
    error_traceback: str
    #: HTML of the output an earlier attempt left; None for the latest, whose output is
    #: the run's own (shown above the attempts).
    output_html: SafeString | None = None


def run_context(user: User, run: Run, now: datetime, zone: tzinfo) -> dict[str, Any]:
    """Everything the run page shows ``user`` of ``run``: in full, or the guest view."""
    full = access.sees_run_in_full(user, run)
    view = projections.run_for(user, run)
    context: dict[str, Any] = {
        "run": run,
        "full": full,
        "short_id": short_id(run.pk),
        "phase": view["phase"],
        "finished": run.is_finished,
        "args_json": pretty_json(view["args"]),
        "times": [
            (_("created"), moment(run.created_at, zone)),
            (_("due"), moment(run.due, zone)),
            (_("started"), moment(run.started_at, zone)),
            (_("finished"), moment(run.finished_at, zone)),
        ],
        "length": length_html(run.started_at, run.finished_at, now),
        "may_abort": not run.is_finished and access.may_abort_run(user, run),
        "may_signal": not run.is_finished and access.may_signal_run(user, run),
        # Why a waiting run waits shows to a guest too, as the socket's frames say it.
        "waiting_for": run.awaiting if run.status == RunStatus.WAITING else "",
        "wake_at": moment(run.wake_at, zone) if run.wake_at is not None else "",
        # The workflow a step's run belongs to: its graph is in the guest view too.
        "workflow": run.workflow_id,
        # The group a group step's run waits for, to gather its members' results.
        "gathers": (
            Group.objects.filter(callback_run=run).values_list("pk", flat=True).first()
            if run.status == RunStatus.WAITING and run.workflow_id is not None
            else None
        ),
        # The flow limits a queued run waits on, as text: a guest may read them too.
        "held_by": [_hold_text(hold, now) for hold in holds(run, now)],
        # Whatever else keeps a queued run from being claimed (a paused queue, no worker).
        "stalled_by": stalls(run, now, zone),
        "may_retry": run.is_finished and full and access.may_start_runs(user),
        # Which runs exist is no secret from a guest: both views link a retry both ways.
        "retry_of": run.retry_of_id,
        "retries": list(run.retries.order_by("created_at", "pk").values_list("pk", flat=True)),
    }
    if not full:
        return context
    if run.abort_requested_at is not None:
        context["times"].append((_("abort requested"), moment(run.abort_requested_at, zone)))
    if run.retry_at is not None:
        context["times"].append((_("retry not before"), moment(run.retry_at, zone)))
    earlier: list[Attempt] = list(run.attempts.select_related("worker").order_by("number"))
    if earlier and earlier[0].started_at is not None:
        # A retried run's time from its first attempt's start: its latest attempt's alone
        # (the duration above) says little of how long the run took.
        context["total_length"] = length_html(earlier[0].started_at, run.finished_at, now)
    state = run.state.data if run.state is not None else None
    output = output_in(state)
    rest = (
        {key: value for key, value in state.items() if key != "output"}
        if isinstance(state, dict)
        else state
    )
    context |= {
        # to_html escapes every character of the output it does not turn into a span.
        "output_html": mark_safe(to_html(output)) if output is not None else None,
        "has_output": output is not None,
        "has_state": run.state is not None,
        "state_json": pretty_json(rest) if rest not in (None, {}) else None,
        "state_revision": run.state.revision if run.state is not None else None,
        "result_json": pretty_json(run.result) if run.status == "done" else None,
        "attempts": attempts(run, earlier, now, zone),
        "steps": steps(run, zone),
    }
    return context


@dataclass(frozen=True)
class StepView:
    """One durable step or wait a run recorded, as the page lists it."""

    kind: str
    name: str
    result_json: str
    attempt: int
    recorded: str


def _hold_text(hold: Hold, now: datetime) -> str:
    """Why a limit holds a run back, with when it may begin for a full rate."""
    if hold.kind == "concurrency":
        return _("Waits for the concurrency limit %(name)s: %(used)s of %(allowed)s running.") % {
            "name": hold.name,
            "used": hold.used,
            "allowed": hold.allowed,
        }
    return _(
        "Waits for the rate limit %(name)s: %(used)s of %(allowed)s begun in its period; "
        "next slot in %(wait)s."
    ) % {
        "name": hold.name,
        "used": hold.used,
        "allowed": hold.allowed,
        "wait": duration(hold.next_slot - now) if hold.next_slot is not None else "-",
    }


def steps(run: Run, zone: tzinfo) -> list[StepView]:
    """The run's recorded steps and waits (:mod:`django_weft.jobs.durable`), in order."""
    return [
        StepView(
            kind=str(record.get_kind_display()),
            name=record.name,
            result_json=pretty_json(record.result),
            attempt=record.attempt,
            recorded=moment(record.recorded_at, zone),
        )
        for record in run.steps.order_by("recorded_at", "pk")
    ]


def attempts(run: Run, earlier: list[Attempt], now: datetime, zone: tzinfo) -> list[AttemptView]:
    """The run's attempts, ``earlier`` ones (its :class:`Attempt` rows, in order), then the
    latest from the run."""
    views = [
        AttemptView(
            number=attempt.number,
            status=str(attempt.status),
            started=moment(attempt.started_at, zone),
            ended=moment(attempt.ended_at, zone),
            length=length_html(attempt.started_at, attempt.ended_at, now),
            worker=str(attempt.worker) if attempt.worker is not None else "-",
            error_type=attempt.error_type,
            error_message=attempt.error_message,
            error_traceback=attempt.error_traceback,
            output_html=mark_safe(to_html(attempt.output)) if attempt.output else None,
        )
        for attempt in earlier
    ]
    if run.attempt > 0 or run.error_type or run.error_message:
        views.append(
            AttemptView(
                number=max(run.attempt, 1),
                status=str(run.status),
                started=moment(run.started_at, zone),
                ended=moment(run.finished_at, zone),
                length=length_html(run.started_at, run.finished_at, now),
                worker=str(run.worker) if run.worker is not None else "-",
                error_type=run.error_type,
                error_message=run.error_message,
                error_traceback=run.error_traceback,
            )
        )
    return views

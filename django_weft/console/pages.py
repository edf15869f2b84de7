"""What the console's pages show: template contexts built from the overview and a run.

The page views (:mod:`django_weft.console.runs`, :mod:`django_weft.console.overview_page`)
check nothing themselves and decide nothing: they hand the request's user here, and
what a user sees of a run is the view :mod:`django_weft.access` gives them (the guest
view leaves out args their job marks private, the output, the result and the errors).
Actions go through :mod:`django_weft.operations`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from django.utils.safestring import mark_safe

from django_weft import access
from django_weft.access import User
from django_weft.console.ansi import to_html
from django_weft.console.charts import bar_chart
from django_weft.console.formatting import (
    duration,
    moment,
    pretty_json,
    run_length,
    short_id,
    zone_name,
)
from django_weft.console.overview import Bucket, read_overview
from django_weft.live import projections
from django_weft.models import Attempt, Run


def overview_context(user: User, now: datetime, zone: tzinfo) -> dict[str, Any]:
    """The overview at ``now``, its moments on the wall clock of ``zone``."""
    overview = read_overview(now)
    return {
        "overview": overview,
        "hour_chart": bar_chart(
            "Runs finished and failed a minute, last hour", overview.last_hour, zone
        ),
        "day_chart": bar_chart(
            "Runs finished and failed a minute (10-minute averages), last day",
            overview.last_day,
            zone,
        ),
        "hour_totals": _totals(overview.last_hour),
        "day_totals": _totals(overview.last_day),
        "now_text": moment(overview.now, zone),
        # A coming fire is printed in this zone; in its schedule's own too if that differs.
        "zone_name": zone_name(zone),
        "can_pause": user.has_perm(access.PAUSE_QUEUE),
    }


def _totals(buckets: Sequence[Bucket]) -> dict[str, int]:
    return {
        "finished": sum(bucket.finished for bucket in buckets),
        "failed": sum(bucket.failed for bucket in buckets),
    }


@dataclass(frozen=True)
class AttemptView:
    """One attempt of a run as the page lists it, the latest last."""

    number: int
    status: str
    started: str
    ended: str
    length: str
    worker: str
    error_type: str
    error_message: str
    error_traceback: str


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
            ("created", moment(run.created_at, zone)),
            ("due", moment(run.due, zone)),
            ("started", moment(run.started_at, zone)),
            ("finished", moment(run.finished_at, zone)),
        ],
        "length": duration(run_length(run.started_at, run.finished_at, now)),
        "may_abort": not run.is_finished and access.may_abort_run(user, run),
        "may_retry": run.is_finished and full and access.may_start_runs(user),
    }
    if not full:
        return context
    if run.abort_requested_at is not None:
        context["times"].append(("abort requested", moment(run.abort_requested_at, zone)))
    if run.retry_at is not None:
        context["times"].append(("retry not before", moment(run.retry_at, zone)))
    state = run.state.data if run.state is not None else None
    output = state.get("output") if isinstance(state, dict) else None
    rest = (
        {key: value for key, value in state.items() if key != "output"}
        if isinstance(state, dict)
        else state
    )
    context |= {
        # to_html escapes every character of the output it does not turn into a span.
        "output_html": mark_safe(to_html(output)) if isinstance(output, str) else None,
        "has_output": isinstance(output, str),
        "has_state": run.state is not None,
        "state_json": pretty_json(rest) if rest not in (None, {}) else None,
        "state_revision": run.state.revision if run.state is not None else None,
        "result_json": pretty_json(run.result) if run.status == "done" else None,
        "attempts": attempts(run, now, zone),
    }
    return context


def attempts(run: Run, now: datetime, zone: tzinfo) -> list[AttemptView]:
    """The run's attempts, earlier ones from :class:`Attempt`, the latest from the run."""
    earlier: list[Attempt] = list(run.attempts.select_related("worker").order_by("number"))
    views = [
        AttemptView(
            number=attempt.number,
            status=str(attempt.status),
            started=moment(attempt.started_at, zone),
            ended=moment(attempt.ended_at, zone),
            length=duration(run_length(attempt.started_at, attempt.ended_at, now)),
            worker=str(attempt.worker) if attempt.worker is not None else "-",
            error_type=attempt.error_type,
            error_message=attempt.error_message,
            error_traceback=attempt.error_traceback,
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
                length=duration(run_length(run.started_at, run.finished_at, now)),
                worker=str(run.worker) if run.worker is not None else "-",
                error_type=run.error_type,
                error_message=run.error_message,
                error_traceback=run.error_traceback,
            )
        )
    return views

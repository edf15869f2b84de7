"""The next fires of a schedule as its page shows them, saved or still being typed.

The lines come from :func:`django_weft.timing.preview.upcoming` (the preview ``runjobs --plan``
prints), so the page and the command agree on every slot and every DST note. The same
HTML is rendered into the page and returned by the page's JSON endpoint while the form
is edited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.template.loader import render_to_string
from django.utils.translation import gettext as _

from django_weft.console.plan_words import dst_policy_words, moment_words, plan_words
from django_weft.models import Schedule
from django_weft.timing.cron import CronError
from django_weft.timing.preview import PreviewLine, upcoming

#: How many upcoming fires the page lists.
NEXT_FIRES = 10


@dataclass(frozen=True)
class FiresPreview:
    """What the page shows under "next fires": the lines, or why there are none."""

    plan: str
    lines: list[PreviewLine] = field(default_factory=list)
    #: Why nothing is listed ("Paused: ..."), or "".
    message: str = ""
    #: What the row does on daylight-saving days, or "".
    dst: str = ""

    @property
    def rows(self) -> list[tuple[str, str, str, str]]:
        """Each line as the page prints it: UTC, the zone's wall clock, the note, its kind."""
        return [
            (f"{line.due:%Y-%m-%d %H:%M} UTC", line.local, line.mark, line.note)
            for line in self.lines
        ]

    def html(self) -> str:
        return render_to_string("admin/django_weft/schedule/next_fires.html", {"preview": self})

    def as_json(self, errors: dict[str, list[str]] | None = None) -> dict[str, Any]:
        """The endpoint's answer; ``errors`` (per field) hide the fires."""
        return {
            "plan": self.plan,
            "fires": [
                {"due": line.due.isoformat(), "local": line.local, "note": line.note}
                for line in self.lines
            ],
            "message": self.message,
            "dst": self.dst,
            "errors": errors or {},
            "html": self.html(),
        }


def fires_preview(schedule: Schedule, now: datetime) -> FiresPreview:
    """The next fires of ``schedule`` after ``now``, or the reason it fires nothing."""
    plan = plan_words(schedule)
    if not schedule.cron and schedule.every is None and schedule.at is None:
        return FiresPreview(
            plan, message=_("Give a cron, an interval or a moment to see the fires.")
        )
    if schedule.at is not None and schedule.first_due(now) is None:
        assert schedule.last_started is not None  # only a started one-off is done
        return FiresPreview(
            plan,
            message=(
                _(
                    "Fired, done: its run started %(started)s. Move its moment past that start"
                    " to fire it again."
                )
                % {"started": moment_words(schedule.last_started)}
            ),
        )
    if not schedule.enabled:
        schedule.armed = False  # resuming arms it from now
    try:
        lines = upcoming(schedule, now, NEXT_FIRES)
    except CronError as error:
        return FiresPreview(plan, message=_("Cannot be planned: %(error)s.") % {"error": error})
    if not schedule.enabled:
        message = _("Paused: nothing fires until it is resumed. Resumed now, it would fire:")
    else:
        message = "" if lines else _("Nothing more to fire.")
    return FiresPreview(plan, lines, message=message, dst=dst_policy_words(schedule, now))


def invalid_preview(schedule: Schedule) -> FiresPreview:
    """No fires while the plan has errors: the fields' own messages say what is wrong."""
    return FiresPreview(
        plan_words(schedule), message=_("The next fires show once the plan is valid.")
    )

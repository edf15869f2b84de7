"""``manage.py prunejobs --older-than 30d``: delete old finished runs in bounded batches,
and the audit trail of the same age."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from django_weft.conf import weft_settings
from django_weft.engine.history.pruning import prune_batch, prune_besides_runs
from django_weft.management.arguments import convert_keywords, period, positive_int
from django_weft.timing import clocks
from django_weft.timing.preview import Period

#: The converters argparse applies, by option; keywords to call_command() go through them too.
_CONVERTERS = {"older_than": period, "batch_size": positive_int}


class Command(BaseCommand):
    help = (
        "Delete finished runs (with their earlier attempts and state documents) that "
        "finished longer ago than --older-than, the rows of workers that stopped "
        "before then, the groups and workflows that ended before then with no run "
        "left, and the audit records of actions taken before then; each schedule's "
        "last run is kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=period,
            required=True,
            metavar="DURATION",
            help="Delete runs that finished longer ago than this (30d, 12h, 2w, ...).",
        )
        parser.add_argument(
            "--batch-size",
            type=positive_int,
            default=None,
            help="Runs per transaction (default: WEFT_PRUNE_BATCH_SIZE).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        convert_keywords(options, _CONVERTERS)
        older_than: Period = options["older_than"]
        size = options["batch_size"] or weft_settings.PRUNE_BATCH_SIZE
        # The process's time: the clock WEFT_CLOCK names (or one installed), as runjobs reads.
        before = (clocks.now() - older_than.length).astimezone(UTC)
        total = 0
        while deleted := prune_batch(before=before, size=size):
            total += deleted
            if options["verbosity"] > 1:
                self.stdout.write(f"deleted {deleted} run(s); {total} so far")
        flows, audited = prune_besides_runs(before=before, size=size)
        self.stdout.write(
            f"deleted {total} run(s) that finished before {before:%Y-%m-%d %H:%M:%S} UTC"
        )
        self.stdout.write(f"deleted {flows} group(s) and workflow(s) that ended before then")
        self.stdout.write(f"deleted {audited} audit record(s) of actions taken before then")

"""``manage.py runjobs``: run the scheduler and the executor, or print the preview."""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Collection
from datetime import datetime, timedelta
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_weft.engine.schedules.previews import enabled_schedules, schedules_enabled
from django_weft.engine.worker.loop import Worker
from django_weft.jobs.registry import registry
from django_weft.management.arguments import (
    address,
    as_period,
    clock_path,
    convert_keywords,
    moment,
    period,
    positive_int,
    seconds,
    writable_file,
)
from django_weft.management.serve import AsgiServer, ServeRefused
from django_weft.timing.clocks import install_clock, load_clock
from django_weft.timing.preview import Period, header, preview

#: The converters argparse applies, by option; keywords to call_command() go through them too.
_CONVERTERS = {
    "concurrency": positive_int,
    "shutdown_grace": seconds,
    "clock": clock_path,
    "plan": period,
    "since": moment,
    "http": address,
    "health_file": writable_file,
}


class Command(BaseCommand):
    help = "Fire due schedules and execute job runs until stopped (SIGTERM/SIGINT)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--concurrency",
            "-c",
            type=positive_int,
            default=None,
            help="How many runs this process executes at once (default: WEFT_CONCURRENCY).",
        )
        parser.add_argument(
            "--queue",
            "-q",
            action="append",
            dest="queues",
            metavar="QUEUE",
            help="Only execute runs of this queue (repeatable; default: every queue).",
        )
        parser.add_argument(
            "--job",
            "-j",
            action="append",
            dest="jobs",
            metavar="JOB",
            help="Only execute runs of this job (repeatable; default: every registered job). "
            "With --plan: only the schedules of this job.",
        )
        parser.add_argument(
            "--no-schedules",
            action="store_false",
            dest="schedules",
            help="Execute runs but fire no schedules.",
        )
        parser.add_argument(
            "--once",
            action="store_true",
            help="Fire what is due, execute what is queued, then exit.",
        )
        parser.add_argument(
            "--clock",
            type=clock_path,
            default=None,
            metavar="IMPORT_STRING",
            help="The clock to read time through (default: WEFT_CLOCK).",
        )
        parser.add_argument(
            "--shutdown-grace",
            type=seconds,
            default=None,
            metavar="SECONDS",
            help="After a stop signal, how long running runs may finish before they are aborted "
            "(default: WEFT_SHUTDOWN_GRACE).",
        )
        parser.add_argument(
            "--health-file",
            type=writable_file,
            default=None,
            metavar="PATH",
            help="Touch PATH at least every second while the worker loop turns (also through "
            "a database outage), for a liveness probe.",
        )
        parser.add_argument(
            "--http",
            type=address,
            default=None,
            metavar="HOST:PORT",
            help="Also serve settings.ASGI_APPLICATION on HOST:PORT from this process "
            "(one process for worker, pages and sockets; needs uvicorn).",
        )
        parser.add_argument(
            "--plan",
            type=period,
            default=None,
            metavar="DURATION",
            help="Print every fire over DURATION (36h, 7d, ...) and exit without running anything.",
        )
        parser.add_argument(
            "--schedule",
            action="append",
            dest="plan_schedules",
            metavar="NAME",
            help="With --plan: only the schedule of this name (repeatable).",
        )
        parser.add_argument(
            "--since",
            type=moment,
            default=None,
            metavar="ISO-8601",
            help="With --plan: start the preview at this moment (default: the clock's now).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        convert_keywords(options, _CONVERTERS)
        if options["since"] is not None and options["plan"] is None:
            raise CommandError("--since only goes with --plan")
        if options["plan_schedules"] and options["plan"] is None:
            raise CommandError("--schedule only goes with --plan")
        unknown = sorted(set(options["jobs"] or ()) - {job.name for job in registry})
        if unknown:
            raise CommandError(f"unknown job(s): {', '.join(unknown)}")
        clock = load_clock(options["clock"])
        if options["plan"] is not None:
            self._print_plan(
                options["since"] or clock.now(),
                options["plan"],
                jobs=options["jobs"] or (),
                names=options["plan_schedules"] or (),
            )
            return
        self._configure_logging(options["verbosity"])
        # Before the worker: a refused --http must leave no worker row behind.
        server = self._server(options["http"]) if options["http"] else None
        previous: dict[int, Any] = {}
        # The process's clock from here on: the worker's (it defaults to it), and what
        # the requests served by --http read, so a run started there lives on its time.
        installed_before = install_clock(clock)
        try:
            worker = Worker(
                concurrency=options["concurrency"],
                queues=options["queues"],
                jobs=options["jobs"],
                schedules=options["schedules"],
                shutdown_grace=options["shutdown_grace"],
                health_file=options["health_file"],
            )
            previous = self._install_signal_handlers(worker)
            if server is not None:
                server.start()
            worker.run(once=options["once"])
        finally:
            if server is not None:
                server.stop()
            # call_command("runjobs", "--once") must not leave SIGINT bound to a dead worker,
            # nor its clock installed.
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            install_clock(installed_before)
        if worker.abandoned:
            # Their threads cannot be stopped, and the interpreter would wait for them.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)

    @staticmethod
    def _server(address: tuple[str, int]) -> AsgiServer:
        try:
            return AsgiServer(*address)
        except ServeRefused as error:
            raise CommandError(str(error)) from None

    def _print_plan(
        self,
        since: datetime,
        length: Period | timedelta,
        *,
        jobs: Collection[str],
        names: Collection[str],
    ) -> None:
        # call_command(plan=timedelta(...)) hands the length over without argparse.
        chosen = as_period("--plan", length)
        enabled = schedules_enabled(names)
        unknown = sorted(set(names) - set(enabled))
        if unknown:
            raise CommandError(f"unknown schedule(s): {', '.join(unknown)}")
        lines = preview(since, chosen.length, enabled_schedules(jobs=jobs, names=names))
        disabled = [name for name, on in enabled.items() if not on]
        self.stdout.write(header(lines, since, chosen, disabled))
        if lines:  # one write: 10,000 schedules make 70,000 lines a week
            self.stdout.write("\n".join(line.render() for line in lines))

    @staticmethod
    def _configure_logging(verbosity: int) -> None:
        logger = logging.getLogger("django_weft")
        if not logger.handlers and not logging.getLogger().handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
            )
            logger.addHandler(handler)
        if verbosity > 1:
            logger.setLevel(logging.DEBUG)
        elif logger.level == logging.NOTSET:
            # What the worker decides is worth seeing, unless the project's LOGGING says.
            logger.setLevel(logging.INFO)

    @staticmethod
    def _install_signal_handlers(worker: Worker) -> dict[int, Any]:
        def handle(signum: int, frame: FrameType | None) -> None:
            if worker.is_stopping:
                logging.getLogger("django_weft").warning("second signal: aborting running runs")
                worker.force_stop()
            else:
                worker.stop()

        return {signum: signal.signal(signum, handle) for signum in (signal.SIGTERM, signal.SIGINT)}

"""A job's finish hook, run in the finish transaction, and what it may do there
(:class:`Finish`: change documents, start runs and groups that commit with the outcome).

Apart from :mod:`~django_weft.engine.outcomes.finishing` because it is what a job's own
code reaches of the finish; the finish calls :func:`run_finish_hook` once it has won the
conditional update, and records a hook's failure on the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction

from django_weft.engine.database.outages import is_outage
from django_weft.engine.flows.groups import Callback, start_group
from django_weft.engine.runs.starting import StartRequest, insert_run
from django_weft.jobs import revisions
from django_weft.jobs.outcomes import Outcome
from django_weft.jobs.registry import Job, registry
from django_weft.jobs.revisions import Change
from django_weft.jobs.tracebacks import record_error
from django_weft.live.changes import Changes
from django_weft.models import Document, Group, GroupCondition, Run, RunStatus

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger("django_weft.runs")


class Finish:
    """The finish transaction a hook works in: the engine's
    :class:`~django_weft.jobs.outcomes.FinishContext`.

    What the hook changes or starts is written in the finish step's transaction and
    noted in its :class:`~django_weft.live.changes.Changes`, so it commits (and is
    announced) with the outcome, or not at all.
    """

    def __init__(self, *, run: Run, now: datetime, changes: Changes) -> None:
        self.run = run
        self.now = now
        self._changes = changes

    def document(
        self,
        key: str,
        *,
        schema: str,
        version: int = 1,
        initial: Callable[[], dict[str, Any]] = dict,
    ) -> Document:
        return revisions.open_document(key, schema=schema, version=version, initial=initial)

    def change(self, document: Document, change: Change) -> Document:
        changed = revisions.change_document(document, change)
        self._changes.document(changed.pk)
        return changed

    def start(
        self,
        job: Job,
        args: Mapping[str, Any] | None = None,
        *,
        key: str | None = None,
        owner: AbstractBaseUser | None = None,
    ) -> Run:
        """Start another job; it exists only if this finish commits."""
        chosen = owner if owner is not None else self.run.owner
        request = StartRequest(job, args, key=key, owner=chosen)
        run = insert_run(request, now=self.now)
        self._changes.run(run.pk)
        return run

    def start_group(
        self,
        members: Sequence[StartRequest],
        *,
        callback: Callback | None = None,
        on_failure: Callback | None = None,
        condition: str = GroupCondition.ALL_ENDED,
        name: str = "",
        key: str | None = None,
        owner: AbstractBaseUser | None = None,
    ) -> Group:
        """Start a group of runs; it exists only if this finish commits."""
        chosen = owner if owner is not None else self.run.owner
        group, _started = start_group(
            members,
            now=self.now,
            changes=self._changes,
            owner=chosen,
            name=name,
            callback=callback,
            on_failure=on_failure,
            condition=GroupCondition(condition),
            key=key,
        )
        return group


def run_finish_hook(run: Run, now: datetime, changes: Changes) -> None:
    job = registry.get(run.job) if run.job in registry else None
    if job is None or job.finish_hook is None:
        return
    outcome = Outcome(
        kind=str(run.status),
        run=run,
        args=run.args,
        state=run.state.data if run.state is not None else None,
        result=run.result,
        error_type=run.error_type,
        error_message=run.error_message,
    )
    try:
        with transaction.atomic():
            job.finish_hook(outcome, Finish(run=run, now=now, changes=changes))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:
        if is_outage(error):
            # The database failed the hook, not the hook's code: the whole finish rolls
            # back and is tried again once the database is back, the hook with it.
            raise
        logger.exception("finish hook of %s run %s failed", run.job, run.pk)
        hook = record_error(error)
        failure = f"finish hook failed: {hook.type}: {hook.message}"
        if run.status == RunStatus.DONE:
            run.status, run.error_type, run.error_message = RunStatus.FAILED, hook.type, failure
            run.error_class_path = hook.class_path
        else:
            run.error_message = f"{run.error_message}; {failure}" if run.error_message else failure
        run.error_traceback = "\n".join(filter(None, [run.error_traceback, hook.traceback]))
        run.save(
            update_fields=[
                "status",
                "error_type",
                "error_class_path",
                "error_message",
                "error_traceback",
            ]
        )

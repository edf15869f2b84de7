"""Durable steps and waits: what a run remembers across its attempts and its waits.

A run's function runs from the top at every attempt: after a retry, after its worker was
lost, and after each wait it ended its attempt for. What must not happen twice (charging
a card, sending a mail) goes in a *step*: the first time a step's function returns, its
result is recorded (a :class:`~django_weft.models.StepRecord`, committed at once), and
every later execution of the run gets the record instead of calling the function.

A *wait* (a sleep until a moment, a wait for a named signal) does not hold the worker:
it records what it waits for and raises :class:`Suspended`, which ends the attempt; the
worker writes the run ``waiting`` and frees the slot. The run is claimable again when
its moment comes or its signal is sent, and its function, run from the top, meets its
steps' records and then the same wait, which now returns. Waits are told apart by their
order in the run (the second wait for ``approval`` is ``approval#2``), so the code
before a wait must come to its waits in the same order every time, as in any replayed
workflow (Temporal, DBOS): decisions on the clock or on chance go in a step.

Recording a step is not transactional with what its function did outside the database:
a worker that dies after the function returned and before the record committed runs it
again on the next attempt. Steps make "again" rare, not impossible; a function whose
effect must be once at most should pass an idempotency key to what it calls (the run's
id and the step's name make a good one).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.dateparse import parse_datetime

from django_weft.exceptions import InvalidSignal, InvalidStep, SignalTimeout
from django_weft.jobs.storable import find_unstorable
from django_weft.models import Run, Signal, StepKind, StepRecord

#: The longest step name (the column's width).
STEP_NAME_LENGTH = StepRecord._meta.get_field("name").max_length or 200
#: The longest signal name (the column's width).
SIGNAL_NAME_LENGTH = Signal._meta.get_field("name").max_length or 100


def check_signal_name(name: object) -> None:
    """Refuse a signal name that could not be sent, so that no run waits for one: blank,
    longer than :data:`SIGNAL_NAME_LENGTH`, holding ``#`` (which numbers a run's waits)
    or a character no database stores."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidSignal("name", "must be a name that is not blank")
    if len(name) > SIGNAL_NAME_LENGTH or "#" in name:
        raise InvalidSignal("name", f'at most {SIGNAL_NAME_LENGTH} characters, and no "#"')
    found = find_unstorable(name, "name")
    if found is not None:
        raise InvalidSignal("name", found.problem)


class Suspended(BaseException):
    """Ends an attempt that waits: the worker records its run ``waiting``.

    A :class:`BaseException`, as ``asyncio.CancelledError`` is, so that a job's ``except
    Exception`` does not swallow it; ``finally`` blocks run as usual. ``wake_at`` is
    when the run is claimable again (the sleep's end, the wait's timeout, or None);
    ``awaiting`` is the signal it waits for (empty for a sleep).
    """

    def __init__(self, *, wake_at: datetime | None, awaiting: str) -> None:
        self.wake_at = wake_at
        self.awaiting = awaiting
        super().__init__(f"waiting for {awaiting or 'a moment'}")


class Journal:
    """A run's steps and waits for one execution of its function: the
    :class:`~django_weft.jobs.context.RunContext` asks it."""

    def __init__(self, run: Run, now: Callable[[], datetime]) -> None:
        self._run = run
        self._now = now
        #: How many waits of each name this execution came to (sleeps under "").
        self._waits: Counter[str] = Counter()

    def step(self, name: str, call: Callable[[], Any]) -> Any:
        """The recorded result of step ``name``, or ``call()``'s, recorded now."""
        found = self.recorded_step(name)
        if found is not None:
            return found.result
        result = _stored_form(name, call())
        try:
            with transaction.atomic():
                StepRecord.objects.create(
                    run=self._run,
                    kind=StepKind.STEP,
                    name=name,
                    result=result,
                    attempt=self._run.attempt,
                    recorded_at=self._now(),
                )
        except IntegrityError:
            # Another execution of this run (its worker was declared lost while it ran on)
            # recorded the step first: its result is the step's, for every execution.
            recorded = self.recorded_step(name)
            if recorded is None:
                raise
            return recorded.result
        return result

    def recorded_step(self, name: str) -> StepRecord | None:
        """Step ``name``'s record, if a run's execution came to it before."""
        if not name.strip() or len(name) > STEP_NAME_LENGTH:
            raise InvalidStep(
                f'step name "{name[:40]}" must be 1 to {STEP_NAME_LENGTH} characters, not blank'
            )
        found: StepRecord | None = StepRecord.objects.filter(
            run=self._run, kind=StepKind.STEP, name=name
        ).first()
        return found

    def sleep_until(self, moment: datetime) -> None:
        """Return once ``moment`` has come; before, end the attempt until it comes.

        The moment is the one recorded the first time the run came to this sleep.
        """
        record = self._wait_record(StepKind.SLEEP, self._wait_name(""), moment)
        until = _moment(record.result)
        if until is not None and self._now() < until:
            raise Suspended(wake_at=until, awaiting="")

    def sleep_for(self, duration: timedelta) -> None:
        """:meth:`sleep_until` the moment ``duration`` after the run first came here."""
        self.sleep_until(self._now() + duration)

    def wait_for(self, signal: str, timeout: timedelta | None) -> Any:
        """The payload of the oldest signal ``signal`` sent to the run and not received
        yet; without one, end the attempt until one is sent, or until ``timeout`` after
        the run first came to this wait (then raise :class:`SignalTimeout`). A name no
        signal could have is refused (:class:`~django_weft.exceptions.InvalidSignal`)."""
        check_signal_name(signal)
        name = self._wait_name(signal)
        waits = False
        with transaction.atomic():
            first = self._now() + timeout if timeout is not None else None
            record = self._wait_record(StepKind.SIGNAL, name, first, lock=True)
            result = dict(record.result or {})
            until = _moment(result)
            if "payload" not in result and not result.get("timed_out"):
                sent = (
                    Signal.objects.select_for_update()
                    .filter(run=self._run, name=signal, received_at__isnull=True)
                    .order_by("sent_at", "pk")
                    .first()
                )
                now = self._now()
                if sent is not None:
                    sent.received_at = now
                    sent.save(update_fields=["received_at"])
                    result.update(payload=sent.payload, signal=sent.pk)
                elif until is not None and now >= until:
                    result["timed_out"] = True
                else:
                    waits = True
                if not waits:
                    record.result = result
                    record.save(update_fields=["result"])
        if waits:
            raise Suspended(wake_at=until, awaiting=signal)
        if result.get("timed_out"):
            raise SignalTimeout(signal, until)
        return result["payload"]

    def _wait_name(self, signal: str) -> str:
        """This execution's next wait for ``signal`` (``""``: a sleep), by its order."""
        self._waits[signal] += 1
        return f"{signal}#{self._waits[signal]}"

    def _wait_record(
        self, kind: StepKind, name: str, until: datetime | None, *, lock: bool = False
    ) -> StepRecord:
        """The wait's record, made with ``until`` the first time the run comes to it."""
        rows = StepRecord.objects.select_for_update() if lock else StepRecord.objects
        record: StepRecord
        record, _made = rows.get_or_create(
            run=self._run,
            kind=kind,
            name=name,
            defaults={
                "result": {"until": until.isoformat() if until is not None else None},
                "attempt": self._run.attempt,
                "recorded_at": self._now(),
            },
        )
        return record


def _moment(result: Any) -> datetime | None:
    until = result.get("until") if isinstance(result, dict) else None
    return parse_datetime(until) if isinstance(until, str) else None


def _stored_form(name: str, result: Any) -> Any:
    """``result`` as the record stores it (JSON: a tuple comes back a list), so that the
    first execution and every later one see the same value; refused when it cannot be."""
    try:
        stored = json.loads(json.dumps(result))
    except (TypeError, ValueError) as error:
        raise InvalidStep(f'step "{name}" returned a result that is not JSON: {error}') from None
    found = find_unstorable(stored, "result")
    if found is not None:
        raise InvalidStep(
            f'step "{name}" returned a result it cannot store: {found.where}: {found.problem}'
        )
    return stored

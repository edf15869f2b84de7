"""Where the scheduler reads time.

The worker loop asks its clock for ``now()`` and waits through it with
``sleep_until()``; nothing below the loop reads the time, it is handed ``now``. The
clock is chosen by ``WEFT_CLOCK`` (an import string) or ``runjobs --clock``; the driven
clock for tests and rehearsals is :class:`django_weft.testing.DrivenClock`.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from django_weft.conf import weft_settings
from django_weft.loading import import_setting


class ClockPaused(Exception):
    """Raised by a driven clock's ``sleep_until`` at the moment it was told to pause at:
    it hands control back to whoever is moving time (``Rehearsal.advance()``)."""


class Clock:
    """The interface every clock implements."""

    #: A driven clock moves time only when every run in flight has finished, so that
    #: what a test observes after ``advance()`` does not depend on thread timing.
    waits_for_runs = False

    def now(self) -> datetime:
        raise NotImplementedError

    def sleep_until(self, moment: datetime | None, wake: threading.Event, longest: float) -> None:
        """Return at ``moment``, when ``wake`` is set, or after ``longest`` seconds."""
        raise NotImplementedError


class SystemClock(Clock):
    """The machine's clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep_until(self, moment: datetime | None, wake: threading.Event, longest: float) -> None:
        timeout = longest
        if moment is not None:
            timeout = min(timeout, max(0.0, (moment - self.now()).total_seconds()))
        wake.wait(timeout)
        wake.clear()


def load_clock(path: str | None = None) -> Clock:
    """A new clock from an import string (default: ``WEFT_CLOCK``)."""
    clock = import_setting(path or weft_settings.CLOCK)()
    if not isinstance(clock, Clock):
        raise TypeError(f"{path or weft_settings.CLOCK} is not a django_weft.timing.clocks.Clock")
    return clock


#: The clock installed for this process (by ``runjobs`` or a rehearsal), if any.
_installed: Clock | None = None
#: The clock loaded from ``WEFT_CLOCK``, with the import string it came from: a changed
#: setting (``override_settings``) loads the clock it names.
_loaded: tuple[str, Clock] | None = None
_lock = threading.Lock()


def install_clock(clock: Clock | None) -> Clock | None:
    """Make ``clock`` the one this process reads (None: ``WEFT_CLOCK``); returns the one
    installed before, to put back.

    ``runjobs`` installs the clock it loaded before it builds its worker (which defaults
    to :func:`current_clock`), so that a run started from the admin, the API or a socket
    served by that process lives on the worker's time; a ``Rehearsal`` installs its
    driven clock while it lives.
    """
    global _installed
    previous, _installed = _installed, clock
    return previous


def current_clock() -> Clock:
    """The process's clock: the installed one, else the one ``WEFT_CLOCK`` names."""
    global _loaded
    if _installed is not None:
        return _installed
    path = weft_settings.CLOCK
    with _lock:
        if _loaded is None or _loaded[0] != path:
            _loaded = (path, load_clock(path))
        return _loaded[1]


def now() -> datetime:
    """What time it is for a request: :func:`current_clock`'s ``now()``."""
    return current_clock().now()

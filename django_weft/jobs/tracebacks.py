"""What an error looks like once it is stored: its type, its message, its traceback.

Pure: used by the run step and the finish step alike, so a run's error and a finish
hook's error are recorded the same way. A NUL character in any of the three is shown as
"␀" (:func:`~django_weft.jobs.storable.storable_text`): PostgreSQL's text columns refuse it,
and an error that cannot be stored would take the run's outcome with it.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from django_weft.jobs.storable import storable_text

#: Longest stored traceback, in characters. The end is kept: the frame that raised and
#: the exception itself are what an operator reads first.
MAX_TRACEBACK = 64 * 1024


@dataclass(frozen=True)
class ErrorRecord:
    """An exception as a run stores it."""

    type: str
    message: str
    traceback: str


def record_error(error: BaseException) -> ErrorRecord:
    """The record of ``error``, its traceback cut to its last ``MAX_TRACEBACK`` characters."""
    text = "".join(traceback.format_exception(error))
    if len(text) > MAX_TRACEBACK:
        text = "…(earlier frames cut)\n" + text[-MAX_TRACEBACK:]
    return ErrorRecord(
        storable_text(type(error).__name__), storable_text(str(error)), storable_text(text)
    )

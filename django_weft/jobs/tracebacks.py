"""What an error looks like once it is stored: its type, its message, its traceback.

Pure: used by the run step and the finish step alike, so a run's error and a finish
hook's error are recorded the same way. A NUL character in any of the three is shown as
"␀" (:func:`~django_weft.jobs.storable.storable_text`): PostgreSQL's text columns refuse it,
and an error that cannot be stored would take the run's outcome with it.
"""

from __future__ import annotations

import builtins
import traceback
from dataclasses import dataclass

from django_weft.jobs.storable import storable_text

#: Longest stored traceback, in characters. The end is kept: the frame that raised and
#: the exception itself are what an operator reads first.
MAX_TRACEBACK = 64 * 1024


#: The errors weft records for what no exception of the job raised (its worker died, it
#: ran past its timeout), by the type name it records, and the importable class that stands
#: for each in a ``django.tasks`` result.
WEFT_ERRORS = {
    "WorkerLost": "django_weft.exceptions.RunLost",
    "WorkerStopped": "django_weft.exceptions.RunAborted",
    "Timeout": "django_weft.exceptions.RunTimedOut",
    "UnknownJob": "django_weft.exceptions.UnknownJob",
    "ProcessDied": "django_weft.exceptions.RunProcessDied",
}


@dataclass(frozen=True)
class ErrorRecord:
    """An exception as a run stores it.

    ``class_path`` is the importable path of its class (``myapp.errors.Flaky``); left out,
    it is what :func:`class_path_of` reads from the type name.
    """

    type: str
    message: str
    traceback: str
    class_path: str = ""

    def __post_init__(self) -> None:
        if not self.class_path and self.type:
            object.__setattr__(self, "class_path", class_path_of(self.type))


def class_path_of(type_name: str) -> str:
    """The class path a bare type name stands for: weft's own errors (:data:`WEFT_ERRORS`),
    else a built-in exception of that name; blank when it is neither.

    Also how rows written before paths were recorded are read.
    """
    if type_name in WEFT_ERRORS:
        return WEFT_ERRORS[type_name]
    found = getattr(builtins, type_name, None)
    if isinstance(found, type) and issubclass(found, BaseException):
        return f"builtins.{type_name}"
    return ""


def record_error(error: BaseException) -> ErrorRecord:
    """The record of ``error``, its traceback cut to its last ``MAX_TRACEBACK`` characters."""
    text = "".join(traceback.format_exception(error))
    if len(text) > MAX_TRACEBACK:
        text = "…(earlier frames cut)\n" + text[-MAX_TRACEBACK:]
    kind = type(error)
    return ErrorRecord(
        storable_text(kind.__name__),
        storable_text(str(error)),
        storable_text(text),
        storable_text(f"{kind.__module__}.{kind.__qualname__}"),
    )

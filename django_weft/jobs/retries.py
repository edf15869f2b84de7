"""When a run is tried again, and how long it waits first: a job's retry policy.

Pure: nothing here reads the clock, the database or the settings. The random source for
the jitter is passed in, so a test can pin it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

#: The outcomes a retry policy may name; ``aborted`` is never retried (someone asked the
#: run to stop) and ``done`` has nothing to retry.
RETRYABLE_OUTCOMES = frozenset({"failed", "lost"})


@dataclass(frozen=True)
class Retry:
    """A job's retry policy: how many attempts, how long between them, and for what.

    The wait before attempt ``n + 1`` is ``backoff * factor ** (n - 1)`` seconds, capped at
    ``max_backoff``, then spread by up to ``jitter`` (a fraction) either way, so that runs
    which failed together do not all come back together.
    """

    max_attempts: int = 3
    backoff: float = 1.0
    factor: float = 2.0
    max_backoff: float = 3600.0
    jitter: float = 0.25
    #: Which outcomes are tried again: ``failed`` (the function raised), ``lost`` (its
    #: worker died, or it ran past its timeout and did not stop).
    on: frozenset[str] = RETRYABLE_OUTCOMES
    #: Exception types that are never retried, whatever ``on`` says: an error that will
    #: come back on every attempt (bad input, a missing row) should fail at once.
    never: tuple[type[BaseException], ...] = field(default=())

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts!r}")
        if self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("backoff and max_backoff must be zero or more seconds")
        if self.factor < 1:
            raise ValueError(f"factor must be at least 1, not {self.factor!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be a fraction from 0 to 1, not {self.jitter!r}")
        unknown = set(self.on) - RETRYABLE_OUTCOMES
        if unknown:
            raise ValueError(
                f"a retry policy retries failed and lost outcomes, not {', '.join(sorted(unknown))}"
            )
        object.__setattr__(self, "on", frozenset(self.on))
        object.__setattr__(self, "never", tuple(self.never))

    def retries(self, outcome: str, attempt: int, error: type[BaseException] | None) -> bool:
        """Whether attempt number ``attempt``, which ended ``outcome``, is tried again."""
        if outcome not in self.on or attempt >= self.max_attempts:
            return False
        return error is None or not issubclass(error, self.never)

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after attempt number ``attempt`` before the next one starts."""
        return exponential_delay(
            attempt, self.backoff, self.factor, self.max_backoff, self.jitter, rng
        )


def exponential_delay(
    step: int,
    initial: float,
    factor: float,
    cap: float,
    jitter: float,
    rng: random.Random | None = None,
) -> float:
    """``initial * factor ** (step - 1)`` seconds, at most ``cap``, spread by ``jitter``.

    Shared by job retries and the worker's back-off from a database outage.
    """
    base = min(cap, initial * factor ** max(0, step - 1))
    return max(0.0, base * (1 + (rng or random).uniform(-jitter, jitter)))

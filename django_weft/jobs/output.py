"""Bounded, rate-limited job output.

A job's run writes its output into a per-run state document (a database row).
Every write of that document is a commit and, while someone watches, a
websocket message, so a run printing thousands of lines a second must neither
commit thousands of times a second nor grow the stored output without bound.

This module holds the two pure pieces that prevent that:

* :class:`OutputBuffer` keeps only the tail of the output, bounded in UTF-8
  bytes and in lines, at O(1) amortised cost per byte written.
* :class:`Throttle` (and :class:`AsyncThrottle` for coroutine writers) turns a
  stream of "something changed" marks into at most one write per interval,
  while guaranteeing that the last change is eventually written.

Nothing here imports Django, starts threads or reads the clock except through
an injectable monotonic function, so the behaviour is fully testable with a
fake clock.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable

from django_weft.jobs.storable import storable_text

__all__ = ["AsyncThrottle", "OutputBuffer", "Throttle", "output_in"]

# Lone surrogates can reach a str (e.g. subprocess output decoded with
# errors="surrogateescape") but cannot be encoded as UTF-8, so neither the
# database nor the websocket could carry them.
_SURROGATES = re.compile("[\ud800-\udfff]")


def _utf8_tail(text: str, max_bytes: int) -> tuple[str, int]:
    """Return the longest suffix of `text` that is at most `max_bytes` in UTF-8, and its size.

    The cut lands on a character boundary, so the result may be up to three
    bytes shorter than `max_bytes` but is always valid text.
    """
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text, len(data)
    tail = data[len(data) - max_bytes :]
    start = 0
    # UTF-8 continuation bytes look like 0b10xxxxxx; skipping them moves the
    # cut forward to the first byte that starts a character.
    while start < len(tail) and tail[start] & 0xC0 == 0x80:
        start += 1
    return tail[start:].decode("utf-8"), len(tail) - start


class OutputBuffer:
    """Keeps the tail of a stream of text within max_bytes (UTF-8) and max_lines.

    A line is finished by ``"\\n"``; text after the last newline is a partial
    line, which counts as a line and is continued by the next write. The
    retained text is always the last lines that fit both bounds. When the
    newest line alone exceeds ``max_bytes`` only its last ``max_bytes`` bytes
    are kept, cut on a character boundary; as soon as another line follows,
    that over-long line no longer fits and is dropped.

    Finished lines live in a deque with their byte sizes and a running total,
    so each write costs time proportional to its own length rather than to
    everything retained; :attr:`text` joins on access.

    Invariant: ``dropped_lines`` plus the number of retained lines (a cut
    line included) equals the number of lines ever written.
    """

    def __init__(self, *, max_bytes: int, max_lines: int) -> None:
        """Create an empty buffer; both bounds must be positive."""
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be > 0, got {max_bytes!r}")
        if max_lines <= 0:
            raise ValueError(f"max_lines must be > 0, got {max_lines!r}")
        self._max_bytes = max_bytes
        self._max_lines = max_lines
        # Finished lines (each ending in "\n") with their UTF-8 sizes.
        self._lines: deque[tuple[str, int]] = deque()
        self._lines_bytes = 0
        # The unfinished last line, kept as fragments so that many small
        # writes to one line (progress bars) do not copy it over and over.
        self._partial: list[str] = []
        self._partial_bytes = 0
        # True once any text follows the last newline. Tracked separately
        # from the fragments because an over-long partial line can be cut
        # down to nothing yet still counts as a line.
        self._partial_open = False
        # Whether the partial line, or the oldest finished line, has ever
        # exceeded max_bytes. Such a line may be shown (as its tail) only while
        # it is the newest line; once another line follows it, it no longer
        # fits and is dropped, as the bounds require. Only the oldest finished
        # line can have been cut, because a line is cut only when it is alone.
        self._partial_cut = False
        self._head_cut = False
        self._dropped_lines = 0
        self._total_bytes = 0

    def write(self, text: str) -> None:
        """Append `text`, which may hold many lines or part of one, and trim to the bounds.

        A NUL character is kept as "␀" (U+2400), which the database can store: it counts
        as the three bytes it takes then.
        """
        if not text:
            return
        text = storable_text(text)
        parts = text.split("\n")
        try:
            sizes = [len(part.encode("utf-8")) for part in parts]
        except UnicodeEncodeError:
            # Checked before any state changes so a bad write cannot leave
            # the buffer half-updated.
            parts = _SURROGATES.sub("\ufffd", text).split("\n")
            sizes = [len(part.encode("utf-8")) for part in parts]
        self._total_bytes += sum(sizes) + len(parts) - 1
        self._append_partial(parts[0], sizes[0])
        for part, size in zip(parts[1:], sizes[1:], strict=True):
            self._finish_line()
            self._append_partial(part, size)
        self._trim()

    @property
    def text(self) -> str:
        """The retained tail: the last lines that fit both bounds."""
        partial = "".join(self._partial)
        if self._partial_bytes > self._max_bytes:
            # The partial line is compacted lazily (see _trim); cut it exactly here.
            partial, _ = _utf8_tail(partial, self._max_bytes)
        return "".join(line for line, _ in self._lines) + partial

    @property
    def dropped_lines(self) -> int:
        """How many whole lines were dropped from the head so far.

        A line cut down to its tail is still partly shown, so it is not dropped.
        """
        return self._dropped_lines

    @property
    def total_bytes(self) -> int:
        """How many UTF-8 bytes were ever written, retained or not."""
        return self._total_bytes

    def _append_partial(self, part: str, size: int) -> None:
        """Continue the partial line with `part` (which holds no newline)."""
        if part:
            self._partial.append(part)
            self._partial_bytes += size
            self._partial_open = True

    def _finish_line(self) -> None:
        """Close the partial line (possibly empty) with a newline and queue it as finished."""
        self._lines.append(("".join(self._partial) + "\n", self._partial_bytes + 1))
        self._lines_bytes += self._partial_bytes + 1
        self._partial = []
        self._partial_bytes = 0
        self._partial_open = False
        if self._partial_cut:
            self._head_cut = True
            self._partial_cut = False

    def _line_count(self) -> int:
        """How many lines are retained, counting an open partial line."""
        return len(self._lines) + (1 if self._partial_open else 0)

    def _trim(self) -> None:
        """Drop head lines until both bounds hold, cutting a sole over-long line to its tail."""
        while self._lines and (
            self._line_count() > self._max_lines
            or self._lines_bytes + self._partial_bytes > self._max_bytes
            or (self._head_cut and self._line_count() > 1)
        ):
            if len(self._lines) == 1 and not self._partial_open:
                break  # the newest line alone is too big: cut it below instead
            _, size = self._lines.popleft()
            self._lines_bytes -= size
            self._dropped_lines += 1
            self._head_cut = False
        if not self._partial_open and self._lines_bytes > self._max_bytes:
            line, _ = self._lines.pop()
            line, size = _utf8_tail(line, self._max_bytes)
            self._lines.append((line, size))
            self._lines_bytes = size
            self._head_cut = True
            return
        if self._partial_bytes > self._max_bytes:
            self._partial_cut = True
        if self._partial_bytes > 2 * self._max_bytes:
            # A partial line that keeps growing is cut only once it reaches
            # twice the bound, so each cut pays for at least max_bytes newly
            # written bytes; cutting at every write would make a long
            # progress-bar line cost O(max_bytes) per write.
            partial, size = _utf8_tail("".join(self._partial), self._max_bytes)
            self._partial = [partial] if partial else []
            self._partial_bytes = size


class _Gate:
    """The write decision shared by Throttle and AsyncThrottle, free of any I/O.

    Protocol: ``mark()`` records a change; ``begin()`` claims a write if one is
    due and returns its start time (or None); the caller then performs the
    write and reports ``succeeded(start)`` or ``failed()``.
    """

    def __init__(self, interval: float, monotonic: Callable[[], float]) -> None:
        """Validate the interval and start with nothing pending."""
        if interval < 0:
            raise ValueError(f"interval must be >= 0, got {interval!r}")
        self._interval = interval
        self._monotonic = monotonic
        self._last_write: float | None = None
        self._writing = False
        self.pending = False
        self.stopped = False
        self.writes = 0

    def mark(self) -> None:
        """Record that something changed since the last write began."""
        if self.stopped:
            raise RuntimeError("throttle is stopped")
        self.pending = True

    def begin(self, *, force: bool) -> float | None:
        """Claim a write if a change is pending and the interval has elapsed (or `force`).

        Returns the write's start time, or None when no write should happen now.
        """
        # A write already in progress (a re-entrant call from inside write(),
        # or another task awaiting it) will be followed up later: the change
        # stays pending rather than starting a second, overlapping write.
        if self._writing or not self.pending:
            return None
        now = self._monotonic()
        if not force and self._last_write is not None and now - self._last_write < self._interval:
            return None
        self._writing = True
        # Cleared before the write runs, so a change marked while the write
        # is in progress (which its snapshot may have missed) stays pending.
        self.pending = False
        self.writes += 1
        return now

    def succeeded(self, started: float) -> None:
        """Record a completed write; the interval counts from when it started."""
        self._writing = False
        self._last_write = started

    def failed(self) -> None:
        """Record a write that raised: its change is undelivered, so the next call retries."""
        self._writing = False
        self.pending = True


class Throttle:
    """Calls `write` at most once per `interval` seconds while changes keep coming,
    and always delivers the last change.

    There is no timer thread: ``write`` runs only inside ``mark``, ``poll``,
    ``flush`` or ``stop``, in the caller's thread. That is deliberate, since
    the write is a database commit that must be made from the job's own
    thread and its own connection. A burst of changes followed by silence is
    still delivered because the run context calls :meth:`poll` from its
    ``sleep()``/``check()`` and :meth:`stop` when the run ends.

    If ``write`` raises, the change stays pending, the next ``mark``/``poll``/
    ``flush`` retries, and the exception propagates to the caller. A ``mark``
    made from inside ``write`` only records the change as pending.
    """

    def __init__(
        self,
        write: Callable[[], object],
        interval: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Wrap `write`; `interval` is in seconds of `monotonic` and must be >= 0."""
        self._write = write
        self._gate = _Gate(interval, monotonic)

    def mark(self) -> bool:
        """Record a change; write now and return True unless the last write is too recent."""
        self._gate.mark()
        return self._write_if_due(force=False)

    def poll(self) -> bool:
        """Write if a change is pending and the interval has elapsed; return whether it wrote."""
        return self._write_if_due(force=False)

    def flush(self) -> bool:
        """Write now if a change is pending, whatever the interval; return whether it wrote."""
        return self._write_if_due(force=True)

    def stop(self) -> None:
        """Flush, then refuse further marks; if the flush raises the throttle is not stopped."""
        self.flush()
        self._gate.stopped = True

    @property
    def pending(self) -> bool:
        """Whether a change has not been written yet."""
        return self._gate.pending

    @property
    def writes(self) -> int:
        """How many times write() was called, including calls that raised."""
        return self._gate.writes

    def _write_if_due(self, *, force: bool) -> bool:
        """Call write() if the gate allows it, reporting the outcome back to the gate."""
        started = self._gate.begin(force=force)
        if started is None:
            return False
        try:
            self._write()
        except BaseException:
            self._gate.failed()
            raise
        self._gate.succeeded(started)
        return True


class AsyncThrottle:
    """Throttle for an ``async`` write function: the same rules, with awaitable methods.

    Writes never overlap. ``mark``/``poll`` that find a write in progress
    leave their change pending instead of waiting; ``flush`` and ``stop``
    wait for the write in progress and then write again if needed, because
    that write's snapshot may predate the latest change. Consequently
    ``flush``/``stop`` must not be awaited from inside ``write`` itself.
    """

    def __init__(
        self,
        write: Callable[[], Awaitable[object]],
        interval: float,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """Wrap `write`; `interval` is in seconds of `monotonic` and must be >= 0."""
        self._write = write
        self._gate = _Gate(interval, monotonic)
        # Serialises writes so flush() can wait for one in progress.
        self._lock = asyncio.Lock()

    async def mark(self) -> bool:
        """Record a change; write now and return True unless the last write is too recent."""
        self._gate.mark()
        return await self._write_if_due(force=False)

    async def poll(self) -> bool:
        """Write if a change is pending and the interval has elapsed; return whether it wrote."""
        return await self._write_if_due(force=False)

    async def flush(self) -> bool:
        """Write now if a change is pending, whatever the interval; return whether it wrote."""
        async with self._lock:
            return await self._write_locked(force=True)

    async def stop(self) -> None:
        """Flush, then refuse further marks; if the flush raises the throttle is not stopped."""
        await self.flush()
        self._gate.stopped = True

    @property
    def pending(self) -> bool:
        """Whether a change has not been written yet."""
        return self._gate.pending

    @property
    def writes(self) -> int:
        """How many times write() was called, including calls that raised."""
        return self._gate.writes

    async def _write_if_due(self, *, force: bool) -> bool:
        """Write if due, without waiting behind a write already in progress."""
        if self._lock.locked():
            return False
        async with self._lock:
            return await self._write_locked(force=force)

    async def _write_locked(self, *, force: bool) -> bool:
        """Call write() if the gate allows it; the caller holds the lock."""
        started = self._gate.begin(force=force)
        if started is None:
            return False
        try:
            await self._write()
        except BaseException:
            # Includes cancellation: the change was not delivered either way.
            self._gate.failed()
            raise
        self._gate.succeeded(started)
        return True


def output_in(state: object) -> str | None:
    """The output a run's state document holds: its ``"output"`` text, as an
    :class:`OutputBuffer`'s writer stores it; None for a state without one."""
    output = state.get("output") if isinstance(state, dict) else None
    return output if isinstance(output, str) else None

"""Tests for django_weft.jobs.output: the bounded output buffer and the write throttles.

All timing uses an injected fake monotonic clock; nothing here sleeps.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from django_weft.jobs.output import AsyncThrottle, OutputBuffer, Throttle


class FakeClock:
    """A monotonic clock that only moves when the test advances it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Recorder:
    """A synchronous write function that counts calls and can be told to fail."""

    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    def __call__(self) -> None:
        self.calls += 1
        if self.fail:
            raise OSError("database is down")


class AsyncRecorder:
    """An async write function that counts calls and can be told to fail."""

    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    async def __call__(self) -> None:
        self.calls += 1
        if self.fail:
            raise OSError("database is down")


def split_lines(text: str) -> list[str]:
    """Split like OutputBuffer counts lines: on "\\n" only, a trailing partial line included."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def char_tail(line: str, max_bytes: int) -> str:
    """The longest suffix of `line` within `max_bytes` UTF-8 bytes, built character by character."""
    kept: list[str] = []
    size = 0
    for char in reversed(line):
        width = len(char.encode("utf-8"))
        if size + width > max_bytes:
            break
        kept.append(char)
        size += width
    return "".join(reversed(kept))


def expected_tail(text: str, max_bytes: int, max_lines: int) -> tuple[str, int]:
    """Reference result for everything written so far: the retained text and dropped line count."""
    lines = split_lines(text)
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        width = len(line.encode("utf-8"))
        if len(kept) == max_lines or size + width > max_bytes:
            break
        kept.append(line)
        size += width
    if not kept and lines:
        # The newest line alone is over max_bytes: its tail is shown, so it is not dropped.
        return char_tail(lines[-1], max_bytes), len(lines) - 1
    return "".join(reversed(kept)), len(lines) - len(kept)


# OutputBuffer


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"max_bytes": 0, "max_lines": 10}, "max_bytes"),
        ({"max_bytes": -1, "max_lines": 10}, "max_bytes"),
        ({"max_bytes": 10, "max_lines": 0}, "max_lines"),
        ({"max_bytes": 10, "max_lines": -5}, "max_lines"),
    ],
)
def test_output_buffer_rejects_non_positive_bounds(kwargs: dict[str, int], name: str) -> None:
    """A bound that is zero or negative raises ValueError naming the argument."""
    with pytest.raises(ValueError, match=name):
        OutputBuffer(**kwargs)


def test_output_buffer_starts_empty() -> None:
    """A new buffer holds no text and has counted nothing."""
    buffer = OutputBuffer(max_bytes=10, max_lines=10)
    assert buffer.text == ""
    assert buffer.dropped_lines == 0
    assert buffer.total_bytes == 0


def test_output_buffer_keeps_last_lines_within_max_lines() -> None:
    """Only the newest max_lines lines are kept; older ones are dropped from the head."""
    buffer = OutputBuffer(max_bytes=10_000, max_lines=3)
    for i in range(10):
        buffer.write(f"line {i}\n")
    assert buffer.text == "line 7\nline 8\nline 9\n"
    assert buffer.dropped_lines == 7


def test_output_buffer_keeps_last_lines_within_max_bytes() -> None:
    """Only as many newest whole lines as fit in max_bytes are kept."""
    buffer = OutputBuffer(max_bytes=15, max_lines=100)
    buffer.write("aaaa\nbbbb\ncccc\ndddd\n")  # 5 bytes per line
    assert buffer.text == "bbbb\ncccc\ndddd\n"
    buffer.write("ee\n")
    assert buffer.text == "cccc\ndddd\nee\n"
    assert buffer.dropped_lines == 2


def test_output_buffer_applies_the_tighter_of_both_bounds() -> None:
    """With both bounds set, whichever is tighter for the current lines decides what is kept."""
    buffer = OutputBuffer(max_bytes=12, max_lines=3)
    buffer.write("a\nb\nc\nd\n")
    assert buffer.text == "b\nc\nd\n"  # the line bound binds
    buffer.write("0123456789\n")
    assert buffer.text == "0123456789\n"  # now the byte bound binds
    assert buffer.dropped_lines == 4


def test_output_buffer_counts_trailing_partial_line_as_line() -> None:
    """Text after the last newline counts as a line against max_lines."""
    buffer = OutputBuffer(max_bytes=100, max_lines=2)
    buffer.write("a\nb\nc")
    assert buffer.text == "b\nc"
    assert buffer.dropped_lines == 1


def test_output_buffer_joins_partial_lines_across_writes() -> None:
    """A line written in pieces is one line once its newline arrives."""
    buffer = OutputBuffer(max_bytes=100, max_lines=2)
    buffer.write("first\nsec")
    buffer.write("ond ")
    buffer.write("half")
    assert buffer.text == "first\nsecond half"
    buffer.write("\nthird")
    assert buffer.text == "second half\nthird"
    assert buffer.dropped_lines == 1


def test_output_buffer_cuts_single_overlong_line_to_last_max_bytes() -> None:
    """A finished line longer than max_bytes alone is kept as its last max_bytes bytes."""
    buffer = OutputBuffer(max_bytes=8, max_lines=5)
    buffer.write("short\n")
    buffer.write("abcdefghijklmnopqrstuvwxyz\n")
    assert buffer.text == "tuvwxyz\n"
    assert buffer.dropped_lines == 1  # "short" was dropped; the cut line was not


def test_output_buffer_cuts_overlong_partial_line_as_it_grows() -> None:
    """A partial line growing past max_bytes shows its tail after every write."""
    buffer = OutputBuffer(max_bytes=10, max_lines=5)
    buffer.write("old\n")
    written = "old\n"
    for i in range(200):
        chunk = f"{i % 10}"
        buffer.write(chunk)
        written += chunk
        assert buffer.text == expected_tail(written, 10, 5)[0]
    assert buffer.text == written[-10:]
    buffer.write("\nnext")
    assert buffer.text == "next"
    assert buffer.dropped_lines == 2  # "old" and the long line, once wholly out of the window


def test_output_buffer_cut_line_is_not_dropped() -> None:
    """A line cut to its tail stays out of dropped_lines until it leaves the window entirely."""
    buffer = OutputBuffer(max_bytes=4, max_lines=5)
    buffer.write("abcdefgh")
    assert buffer.text == "efgh"
    assert buffer.dropped_lines == 0
    buffer.write("\nxy")
    assert buffer.text == "xy"
    assert buffer.dropped_lines == 1


@pytest.mark.parametrize(
    ("first", "shown", "then"),
    [("😀😀\n", "😀\n", "z"), ("😀😀😀😀", "😀", "\nz")],
)
def test_output_buffer_drops_cut_line_once_a_newer_line_follows(
    first: str, shown: str, then: str
) -> None:
    """An over-long line shows only while newest, even if its cut tail fits beside the next."""
    buffer = OutputBuffer(max_bytes=6, max_lines=5)
    buffer.write(first)
    assert buffer.text == shown
    buffer.write(then)
    assert buffer.text == "z"
    assert buffer.dropped_lines == 1


@pytest.mark.parametrize("max_bytes", range(1, 30))
@pytest.mark.parametrize("newline", ["", "\n"])
def test_output_buffer_cuts_multibyte_text_on_character_boundary(
    max_bytes: int, newline: str
) -> None:
    """Cutting emoji and accented letters never splits a character and keeps the longest tail."""
    line = "héllo wörld 😀 ça 🎉 ñ" + newline
    buffer = OutputBuffer(max_bytes=max_bytes, max_lines=3)
    buffer.write(line)
    text = buffer.text
    encoded = text.encode("utf-8")  # raises if the text were invalid
    assert line.endswith(text)
    assert len(encoded) <= max_bytes
    assert text == char_tail(line, max_bytes)


def test_output_buffer_counts_utf8_bytes_not_characters() -> None:
    """Bounds and total_bytes are measured in UTF-8 bytes."""
    buffer = OutputBuffer(max_bytes=6, max_lines=10)
    buffer.write("é\n😀\n")  # 3 + 5 bytes
    assert buffer.total_bytes == 8
    assert buffer.text == "😀\n"
    assert buffer.dropped_lines == 1


def test_output_buffer_counts_dropped_lines_and_total_bytes() -> None:
    """total_bytes counts every byte written and dropped_lines every whole line dropped."""
    buffer = OutputBuffer(max_bytes=1000, max_lines=2)
    buffer.write("one\ntwo\n")
    buffer.write("")
    buffer.write("three\nfo")
    buffer.write("ur")
    assert buffer.total_bytes == len(b"one\ntwo\nthree\nfour")
    assert buffer.text == "three\nfour"
    assert buffer.dropped_lines == 2


def test_output_buffer_keeps_empty_lines() -> None:
    """Blank lines are lines: they count against max_lines and are kept in the text."""
    buffer = OutputBuffer(max_bytes=100, max_lines=3)
    buffer.write("a\n\n\n\nb")
    assert buffer.text == "\n\nb"
    assert buffer.dropped_lines == 2


def test_output_buffer_replaces_lone_surrogates() -> None:
    """Text that cannot be encoded as UTF-8 is stored with U+FFFD in place of lone surrogates."""
    buffer = OutputBuffer(max_bytes=100, max_lines=10)
    buffer.write("ok \udcff bad\n")
    assert buffer.text == "ok \ufffd bad\n"
    assert buffer.total_bytes == len(buffer.text.encode("utf-8"))


@pytest.mark.parametrize("newlines", [1, 3])
@pytest.mark.parametrize("seed", range(30))
def test_output_buffer_matches_reference_for_random_writes(seed: int, newlines: int) -> None:
    """Random chunks of mixed text always leave exactly the reference tail and counts."""
    rng = random.Random(seed)
    max_bytes = rng.randint(1, 40)
    max_lines = rng.randint(1, 6)
    # With one newline among many letters, lines often outgrow max_bytes.
    alphabet = ["a", "b", "é", "😀", " "] * (4 - newlines) + ["\n"] * newlines
    buffer = OutputBuffer(max_bytes=max_bytes, max_lines=max_lines)
    written = ""
    for _ in range(150):
        chunk = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25)))
        buffer.write(chunk)
        written += chunk
        text, dropped = expected_tail(written, max_bytes, max_lines)
        assert buffer.text == text
        assert buffer.dropped_lines == dropped
        assert buffer.total_bytes == len(written.encode("utf-8"))


# Throttle


def test_throttle_rejects_negative_interval() -> None:
    """A negative interval raises ValueError naming the argument."""
    with pytest.raises(ValueError, match="interval"):
        Throttle(Recorder(), -0.1)


def test_throttle_first_mark_writes_immediately() -> None:
    """The first change is written at once, since nothing was written before."""
    clock = FakeClock()
    write = Recorder()
    throttle = Throttle(write, 1.0, monotonic=clock)
    assert throttle.mark() is True
    assert write.calls == 1
    assert throttle.writes == 1
    assert throttle.pending is False


def test_throttle_mark_within_interval_stays_pending() -> None:
    """Changes within the interval after a write are remembered, not written."""
    clock = FakeClock()
    write = Recorder()
    throttle = Throttle(write, 1.0, monotonic=clock)
    throttle.mark()
    clock.advance(0.5)
    assert throttle.mark() is False
    assert throttle.mark() is False
    assert throttle.pending is True
    assert write.calls == 1


def test_throttle_mark_after_interval_writes() -> None:
    """A change arriving once the interval has elapsed is written at once."""
    clock = FakeClock()
    write = Recorder()
    throttle = Throttle(write, 1.0, monotonic=clock)
    throttle.mark()
    clock.advance(1.0)
    assert throttle.mark() is True
    assert write.calls == 2


def test_throttle_zero_interval_writes_every_mark() -> None:
    """With interval 0 every change is written immediately."""
    clock = FakeClock()
    write = Recorder()
    throttle = Throttle(write, 0, monotonic=clock)
    assert all(throttle.mark() for _ in range(5))
    assert write.calls == 5


def test_throttle_poll_delivers_pending_change_after_interval() -> None:
    """poll() writes a pending change once the interval has elapsed, and not before."""
    clock = FakeClock()
    write = Recorder()
    throttle = Throttle(write, 1.0, monotonic=clock)
    throttle.mark()
    clock.advance(0.25)
    throttle.mark()
    clock.advance(0.5)
    assert throttle.poll() is False
    assert write.calls == 1
    clock.advance(0.25)
    assert throttle.poll() is True
    assert write.calls == 2
    assert throttle.pending is False


def test_throttle_poll_without_pending_change_does_not_write() -> None:
    """poll() never writes when nothing changed since the last write."""
    clock = FakeClock()
    write = Recorder()
    throttle = Throttle(write, 1.0, monotonic=clock)
    assert throttle.poll() is False
    throttle.mark()
    clock.advance(5)
    assert throttle.poll() is False
    assert write.calls == 1


def test_throttle_flush_delivers_pending_change_immediately() -> None:
    """flush() writes a pending change regardless of the interval."""
    clock = FakeClock()
    write = Recorder()
    throttle = Throttle(write, 60.0, monotonic=clock)
    throttle.mark()
    throttle.mark()
    assert throttle.flush() is True
    assert write.calls == 2
    assert throttle.pending is False


def test_throttle_flush_without_pending_change_does_not_write() -> None:
    """flush() does nothing when there is no pending change."""
    write = Recorder()
    throttle = Throttle(write, 60.0, monotonic=FakeClock())
    assert throttle.flush() is False
    throttle.mark()
    assert throttle.flush() is False
    assert write.calls == 1


def test_throttle_interval_counts_from_last_write() -> None:
    """After a flush the interval restarts, so the next mark within it stays pending."""
    clock = FakeClock()
    write = Recorder()
    throttle = Throttle(write, 1.0, monotonic=clock)
    throttle.mark()
    clock.advance(0.75)
    throttle.mark()
    throttle.flush()
    clock.advance(0.5)
    assert throttle.mark() is False
    assert write.calls == 2


def test_throttle_stop_delivers_pending_change() -> None:
    """stop() writes the last pending change."""
    clock = FakeClock()
    write = Recorder()
    throttle = Throttle(write, 60.0, monotonic=clock)
    throttle.mark()
    throttle.mark()
    throttle.stop()
    assert write.calls == 2
    assert throttle.pending is False


def test_throttle_stop_without_pending_change_does_not_write() -> None:
    """stop() with nothing pending makes no write, and may be called again."""
    write = Recorder()
    throttle = Throttle(write, 60.0, monotonic=FakeClock())
    throttle.mark()
    throttle.stop()
    throttle.stop()
    assert write.calls == 1


def test_throttle_mark_after_stop_raises() -> None:
    """A change after stop() raises RuntimeError instead of being lost silently."""
    throttle = Throttle(Recorder(), 1.0, monotonic=FakeClock())
    throttle.stop()
    with pytest.raises(RuntimeError, match="throttle is stopped"):
        throttle.mark()


def test_throttle_failed_write_keeps_change_pending() -> None:
    """A write that raises propagates and leaves the change pending for the next call to retry."""
    clock = FakeClock()
    write = Recorder(fail=True)
    throttle = Throttle(write, 1.0, monotonic=clock)
    with pytest.raises(OSError, match="database is down"):
        throttle.mark()
    assert throttle.pending is True
    with pytest.raises(OSError, match="database is down"):
        throttle.poll()
    write.fail = False
    assert throttle.flush() is True
    assert throttle.pending is False
    assert write.calls == 3
    assert throttle.writes == 3


def test_throttle_failed_stop_does_not_stop() -> None:
    """If the final flush raises, stop() propagates it and the throttle stays usable."""
    write = Recorder(fail=True)
    throttle = Throttle(write, 60.0, monotonic=FakeClock())
    with pytest.raises(OSError, match="database is down"):
        throttle.mark()
    with pytest.raises(OSError, match="database is down"):
        throttle.stop()
    write.fail = False
    throttle.mark()
    throttle.stop()
    assert throttle.pending is False


def test_throttle_mark_during_write_stays_pending() -> None:
    """A change made from inside write() does not recurse; it stays pending for the next call."""
    clock = FakeClock()
    calls: list[bool] = []

    def write() -> None:
        calls.append(throttle.mark())

    throttle = Throttle(write, 0, monotonic=clock)
    assert throttle.mark() is True
    assert calls == [False]
    assert throttle.pending is True


def test_throttle_with_buffer_bounds_writes_for_fast_output() -> None:
    """10,000 lines a second for a second make about one write per interval and end exact."""
    clock = FakeClock()
    buffer = OutputBuffer(max_bytes=4096, max_lines=200)
    snapshots: list[str] = []
    interval = 0.05
    throttle = Throttle(lambda: snapshots.append(buffer.text), interval, monotonic=clock)
    fed: list[str] = []
    start = clock()
    for i in range(10_000):
        line = f"{i:05d} {'é' * (i % 7)}{'😀' * (i % 3)} line\n"
        fed.append(line)
        buffer.write(line)
        throttle.mark()
        clock.advance(0.0001)
    elapsed = clock() - start
    throttle.stop()

    assert throttle.writes <= 1 + elapsed / interval + 1
    assert throttle.writes >= elapsed / interval  # and it did keep writing during the burst
    expected, dropped = expected_tail("".join(fed), 4096, 200)
    assert buffer.text == expected
    assert buffer.dropped_lines == dropped
    assert snapshots[-1] == buffer.text
    assert buffer.total_bytes == sum(len(line.encode("utf-8")) for line in fed)


# AsyncThrottle


def test_async_throttle_rejects_negative_interval() -> None:
    """A negative interval raises ValueError naming the argument."""
    with pytest.raises(ValueError, match="interval"):
        AsyncThrottle(AsyncRecorder(), -1)


def test_async_throttle_mark_writes_then_holds_within_interval() -> None:
    """The first change is written at once; changes within the interval stay pending."""

    async def scenario() -> None:
        clock = FakeClock()
        write = AsyncRecorder()
        throttle = AsyncThrottle(write, 1.0, monotonic=clock)
        assert await throttle.mark() is True
        clock.advance(0.5)
        assert await throttle.mark() is False
        assert throttle.pending is True
        assert write.calls == 1
        assert throttle.writes == 1

    asyncio.run(scenario())


def test_async_throttle_poll_delivers_pending_change_after_interval() -> None:
    """poll() writes a pending change once the interval has elapsed, and not before."""

    async def scenario() -> None:
        clock = FakeClock()
        write = AsyncRecorder()
        throttle = AsyncThrottle(write, 1.0, monotonic=clock)
        await throttle.mark()
        await throttle.mark()
        clock.advance(0.75)
        assert await throttle.poll() is False
        clock.advance(0.25)
        assert await throttle.poll() is True
        assert await throttle.poll() is False
        assert write.calls == 2

    asyncio.run(scenario())


def test_async_throttle_flush_and_stop_deliver_pending_change() -> None:
    """flush() and stop() write a pending change regardless of the interval."""

    async def scenario() -> None:
        write = AsyncRecorder()
        throttle = AsyncThrottle(write, 60.0, monotonic=FakeClock())
        await throttle.mark()
        await throttle.mark()
        assert await throttle.flush() is True
        assert await throttle.flush() is False
        await throttle.mark()
        await throttle.stop()
        assert write.calls == 3
        assert throttle.pending is False

    asyncio.run(scenario())


def test_async_throttle_mark_after_stop_raises() -> None:
    """A change after stop() raises RuntimeError."""

    async def scenario() -> None:
        throttle = AsyncThrottle(AsyncRecorder(), 1.0, monotonic=FakeClock())
        await throttle.stop()
        with pytest.raises(RuntimeError, match="throttle is stopped"):
            await throttle.mark()

    asyncio.run(scenario())


def test_async_throttle_failed_write_keeps_change_pending() -> None:
    """A write that raises propagates and leaves the change pending for the next call to retry."""

    async def scenario() -> None:
        write = AsyncRecorder(fail=True)
        throttle = AsyncThrottle(write, 1.0, monotonic=FakeClock())
        with pytest.raises(OSError, match="database is down"):
            await throttle.mark()
        assert throttle.pending is True
        write.fail = False
        assert await throttle.flush() is True
        assert throttle.pending is False
        assert write.calls == 2

    asyncio.run(scenario())


def test_async_throttle_flush_waits_for_write_in_progress() -> None:
    """A change made during a write stays pending, and flush() delivers it after that write."""

    async def scenario() -> None:
        release = asyncio.Event()
        started = asyncio.Event()
        calls = 0

        async def write() -> None:
            nonlocal calls
            calls += 1
            started.set()
            await release.wait()

        throttle = AsyncThrottle(write, 0, monotonic=FakeClock())
        first = asyncio.create_task(throttle.mark())
        await started.wait()
        assert await throttle.mark() is False  # does not overlap the write in progress
        assert throttle.pending is True
        flushing = asyncio.create_task(throttle.flush())
        await asyncio.sleep(0)
        assert calls == 1  # flush is waiting, not writing alongside
        release.set()
        assert await first is True
        assert await flushing is True
        assert calls == 2
        assert throttle.pending is False

    asyncio.run(scenario())


def test_async_throttle_with_buffer_bounds_writes_for_fast_output() -> None:
    """10,000 lines a second for a second make about one async write per interval and end exact."""

    async def scenario() -> None:
        clock = FakeClock()
        buffer = OutputBuffer(max_bytes=2048, max_lines=100)
        snapshots: list[str] = []
        interval = 0.05

        async def write() -> None:
            snapshots.append(buffer.text)

        throttle = AsyncThrottle(write, interval, monotonic=clock)
        fed: list[str] = []
        start = clock()
        for i in range(10_000):
            line = f"{i} ça {'🎉' * (i % 4)}\n"
            fed.append(line)
            buffer.write(line)
            await throttle.mark()
            clock.advance(0.0001)
        elapsed = clock() - start
        await throttle.stop()

        assert throttle.writes <= 1 + elapsed / interval + 1
        expected, _ = expected_tail("".join(fed), 2048, 100)
        assert buffer.text == expected
        assert snapshots[-1] == buffer.text

    asyncio.run(scenario())

"""Jobs only the tests use (the tests of :mod:`django_weft.jobs` sit beside them)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from typing import Any

from django.db import connection
from rest_framework import serializers

from django_weft.exceptions import RunAborted
from django_weft.jobs.context import RunContext
from django_weft.jobs.outcomes import FinishContext, Outcome
from django_weft.jobs.output import OutputBuffer
from django_weft.jobs.registry import StateSpec, job
from django_weft.jobs.retries import Retry
from django_weft.models import Document


@job("tests.broken")
def broken(ctx: RunContext) -> None:
    raise RuntimeError("broken has no rows to work on")


@job("tests.noop")
def noop(ctx: RunContext) -> None:
    """Does nothing; counts fires in tests that only look at runs."""


class SleepArgs(serializers.Serializer[Any]):
    seconds = serializers.FloatField(min_value=0)


@job("tests.sleep", args=SleepArgs)
def sleep(ctx: RunContext, seconds: float) -> None:
    """Sleeps through the run context, so an abort or a shutdown interrupts it."""
    ctx.sleep(seconds)


@job("tests.due")
def report_due(ctx: RunContext) -> str | None:
    """Returns the due it was given, so a test reads what the job saw from the run's result."""
    return ctx.due.isoformat() if ctx.due is not None else None


@job(
    "tests.async_sum",
    args=SleepArgs,
    state=StateSpec("tests.async_state", initial=lambda: {"steps": 0}),
)
async def async_sum(ctx: RunContext, seconds: float) -> int:
    """An ``async def`` job: awaits the abort-aware sleep and changes its state."""
    assert ctx.state is not None
    await ctx.asleep(seconds)
    await ctx.acheck()
    data = await ctx.state.achange(lambda d: d.__setitem__("steps", d["steps"] + 1))
    return int(data["steps"])


class ChainArgs(serializers.Serializer[Any]):
    fail = serializers.BooleanField(default=False)


@job("tests.chain", args=ChainArgs)
def chain(ctx: RunContext, fail: bool) -> str:
    """Returns at once; its finish hook does the work under test."""
    return "chained"


@chain.finish
def chain_finished(outcome: Outcome, tx: FinishContext) -> None:
    """Writes a document and starts a job, then raises if the run's args ask it to."""
    tx.change(
        tx.document("tests:chain", schema="tests.chain", initial=lambda: {"finishes": 0}),
        lambda data: data.__setitem__("finishes", data["finishes"] + 1),
    )
    tx.start(noop)
    if outcome.args["fail"]:
        raise ValueError("the finish hook broke")


@job("tests.watched_sleep", args=SleepArgs)
def watched_sleep(ctx: RunContext, seconds: float) -> None:
    """Sleeps; its finish hook counts finishes per run, to prove a finish happens once."""
    ctx.sleep(seconds)


@watched_sleep.finish
def watched_sleep_finished(outcome: Outcome, tx: FinishContext) -> None:
    key = f"tests:finishes:{outcome.run.pk}"
    tx.change(
        tx.document(key, schema="tests.finishes", initial=lambda: {"count": 0, "kinds": []}),
        lambda data: data.update(count=data["count"] + 1, kinds=[*data["kinds"], outcome.kind]),
    )


class OnePerOwnerArgs(serializers.Serializer[Any]):
    label = serializers.CharField()


@job(
    "tests.one_per_owner",
    args=OnePerOwnerArgs,
    concurrency=1,
    concurrency_key=lambda args, owner: f"user:{owner.pk}" if owner is not None else None,
)
def one_per_owner(ctx: RunContext, label: str) -> None:
    """At most one unfinished run per owner."""


class PrivateArgs(serializers.Serializer[Any]):
    label = serializers.CharField()
    secret = serializers.CharField()


@job(
    "tests.private",
    args=PrivateArgs,
    private_args=("secret",),
    state=StateSpec("tests.private_state", initial=lambda: {"note": "for the owner"}),
)
def private(ctx: RunContext, label: str, secret: str) -> str:
    """Has an arg and a state only the owner may see: what a guest view must leave out."""
    return label


@job("tests.spin", args=SleepArgs)
def spin(ctx: RunContext, seconds: float) -> None:
    """Busy for ``seconds`` without ever calling sleep() or check(): ignores aborts."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)


@job("tests.returns_a_moment")
def returns_a_moment(ctx: RunContext) -> object:
    """Returns something JSON cannot hold."""
    return ctx.run.created_at


@job("tests.swallows_abort", args=SleepArgs)
def swallows_abort(ctx: RunContext, seconds: float) -> str:
    """Catches RunAborted and returns normally: it was still aborted."""
    with contextlib.suppress(RunAborted):
        ctx.sleep(seconds)
    return "carried on"


@job("tests.forgets_to_flush", state=StateSpec("tests.output", initial=lambda: {"text": ""}))
def forgets_to_flush(ctx: RunContext) -> None:
    """Marks a throttled write twice within the interval and never stops the throttle."""
    assert ctx.state is not None
    state = ctx.state
    lines: list[str] = []

    def write() -> None:
        text = "".join(lines)
        state.change(lambda data: data.__setitem__("text", text))

    throttle = ctx.throttle(write, 3600)
    for line in ("first\n", "last\n"):
        lines.append(line)
        throttle.mark()


@job("tests.flaky", retry=Retry(max_attempts=3, backoff=60, jitter=0))
def flaky(ctx: RunContext) -> int:
    """Fails its first two attempts, succeeds on the third."""
    if ctx.attempt < 3:
        raise ConnectionError(f"attempt {ctx.attempt} could not reach the mail server")
    return ctx.attempt


@flaky.finish
def flaky_finished(outcome: Outcome, tx: FinishContext) -> None:
    """Counts finishes per run: retried attempts must not run the hook."""
    key = f"tests:finishes:{outcome.run.pk}"
    tx.change(
        tx.document(key, schema="tests.finishes", initial=lambda: {"count": 0, "kinds": []}),
        lambda data: data.update(count=data["count"] + 1, kinds=[*data["kinds"], outcome.kind]),
    )


@job("tests.flaky_fast", retry=Retry(max_attempts=3, backoff=0.2, jitter=0))
def flaky_fast(ctx: RunContext) -> int:
    """Fails its first two attempts, 0.2 and 0.4 s apart, then succeeds: for real processes."""
    if ctx.attempt < 3:
        raise ConnectionError(f"attempt {ctx.attempt} could not reach the mail server")
    return ctx.attempt


@job("tests.always_fails", retry=Retry(max_attempts=2, backoff=10, jitter=0))
def always_fails(ctx: RunContext) -> None:
    """Fails every attempt: ends failed once its attempts are used up."""
    raise ValueError(f"attempt {ctx.attempt} failed too")


@job(
    "tests.never_retried",
    retry=Retry(max_attempts=5, backoff=10, jitter=0, never=(LookupError,)),
)
def never_retried(ctx: RunContext) -> None:
    """Raises an error its policy never retries."""
    raise KeyError("no such row")


class RaiseArgs(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=["system_exit", "keyboard_interrupt", "cancelled"])


@job("tests.raises_base", args=RaiseArgs)
def raises_base(ctx: RunContext, kind: str) -> None:
    """Raises a BaseException that is not an Exception."""
    if kind == "system_exit":
        raise SystemExit(3)
    if kind == "keyboard_interrupt":
        raise KeyboardInterrupt
    raise asyncio.CancelledError("cancelled by the job")


@job("tests.cancelled_on_abort", args=SleepArgs)
async def cancelled_on_abort(ctx: RunContext, seconds: float) -> None:
    """An async job that turns an abort into CancelledError, as asyncio code does."""
    try:
        await ctx.asleep(seconds)
    except RunAborted:
        raise asyncio.CancelledError("the abort cancelled it") from None


@job("tests.slow", args=SleepArgs, timeout=0.5)
def slow(ctx: RunContext, seconds: float) -> None:
    """Sleeps through the run context past its timeout: stopped by it."""
    ctx.sleep(seconds)


def gate_key(run_id: object) -> str:
    """The document whose existence opens the gate of tests.gated (or stubborn) ``run_id``."""
    return f"tests:gate:{run_id}"


def open_gate(run_id: object) -> None:
    """Let tests.gated (or stubborn) run ``run_id`` end: done, or failed if told to fail."""
    Document.objects.create(key=gate_key(run_id), schema="tests.gate")


@job("tests.stubborn", args=SleepArgs, timeout=0.3, concurrency=1)
def stubborn(ctx: RunContext, seconds: float) -> str:
    """Ignores its timeout (never sleeps or checks) for ``seconds``, or until its gate
    opens (:func:`open_gate`); at most one unfinished run."""
    deadline = time.monotonic() + seconds
    gate = Document.objects.filter(key=gate_key(ctx.run_id))
    while time.monotonic() < deadline and not gate.exists():
        time.sleep(0.05)
    return "finished after all"


@job(
    "tests.retried_when_lost",
    args=SleepArgs,
    retry=Retry(max_attempts=2, backoff=0, jitter=0, on=frozenset({"lost"})),
)
def retried_when_lost(ctx: RunContext, seconds: float) -> int:
    """Sleeps on its first attempt only; retried once when its worker dies under it."""
    if ctx.attempt == 1:
        ctx.sleep(seconds)
    return ctx.attempt


@retried_when_lost.finish
def retried_when_lost_finished(outcome: Outcome, tx: FinishContext) -> None:
    flaky_finished(outcome, tx)


#: Every connection ``tests.connection_id`` saw, kept alive so that ids are never reused.
SEEN_CONNECTIONS: list[object] = []


@job("tests.connection_id")
def connection_id(ctx: RunContext) -> int:
    """Returns the id of the database connection object its thread used."""
    connection.ensure_connection()
    SEEN_CONNECTIONS.append(connection.connection)
    return id(connection.connection)


flaky_fast.finish(flaky_finished)


@job("tests.greet")
def greet(ctx: RunContext, name: str, greeting: str = "hello", times: int = 1) -> str:
    """No args serializer: the function's own keyword parameters are its args."""
    return " ".join([f"{greeting}, {name}"] * times)


@job("tests.anything")
def anything(ctx: RunContext, **options: Any) -> dict[str, Any]:
    """No serializer and ``**options``: any JSON args, returned as they came."""
    return options


class BuildArgs(serializers.Serializer[Any]):
    steps = serializers.IntegerField(min_value=0, max_value=100_000)
    interval = serializers.FloatField(min_value=0, default=0.05)
    fail = serializers.BooleanField(default=False)


@job(
    "tests.build",
    args=BuildArgs,
    state=StateSpec("tests.build_state", initial=lambda: {"output": ""}),
)
def build(ctx: RunContext, steps: int, interval: float, fail: bool) -> dict[str, int]:
    """A build that prints coloured lines, as a terminal would show them, then passes or
    fails: what the console's run page renders."""
    assert ctx.state is not None
    state = ctx.state
    out = OutputBuffer(max_bytes=64 * 1024, max_lines=2_000)
    throttle = ctx.throttle(lambda: state.change(lambda data: data.update(output=out.text)), 0.05)
    try:
        out.write("\x1b[1mbuilding\x1b[0m the project\n")
        for number in range(1, steps + 1):
            ctx.sleep(interval)
            out.write(f"\x1b[32m✔\x1b[0m step {number} \x1b[2m({number * 7 % 50} ms)\x1b[0m\n")
            if number % 10 == 0:
                out.write(f"\x1b[33mwarning:\x1b[0m step {number} took its time\n")
            throttle.mark()
        if fail:
            out.write("\x1b[1;31merror:\x1b[0m the last step exited with status 1\n")
            raise RuntimeError(f"step {steps} failed: exit status 1")
        out.write(f"\x1b[1;32mdone\x1b[0m: {steps} steps\n")
        return {"steps": steps}
    finally:
        throttle.stop()


class GateArgs(serializers.Serializer[Any]):
    fail = serializers.BooleanField(default=False)


@job("tests.gated", args=GateArgs)
def gated(ctx: RunContext, fail: bool) -> None:
    """Runs until the test opens its gate (:func:`open_gate`), then passes or fails: a run
    that stays ``running`` for as long as a test needs to see it so, however busy the
    machine, instead of for a number of seconds a slow browser may miss."""
    wait_for_the_gate(ctx)
    if fail:
        raise RuntimeError("the gate opened onto a failure")


def wait_for_the_gate(ctx: RunContext) -> None:
    """Sleep (hearing aborts) until the test opens this run's gate."""
    gate = Document.objects.filter(key=gate_key(ctx.run_id))
    while not gate.exists():
        ctx.sleep(0.05)


@job("tests.watched_gate")
def watched_gate(ctx: RunContext) -> None:
    """Runs until its gate opens; its finish hook counts finishes per run, as
    tests.watched_sleep's does."""
    wait_for_the_gate(ctx)


@watched_gate.finish
def watched_gate_finished(outcome: Outcome, tx: FinishContext) -> None:
    watched_sleep_finished(outcome, tx)


@job("tests.watched_stuck", timeout=1)
def watched_stuck(ctx: RunContext) -> str:
    """Ignores its one-second timeout (never sleeps or checks) until its gate opens, then
    returns; its finish hook counts finishes per run, as tests.watched_sleep's does."""
    gate = Document.objects.filter(key=gate_key(ctx.run_id))
    while not gate.exists():
        time.sleep(0.05)
    return "finished after all"


@watched_stuck.finish
def watched_stuck_finished(outcome: Outcome, tx: FinishContext) -> None:
    watched_sleep_finished(outcome, tx)


#: A NUL character, made where a job makes it: args holding one are refused at start.
NUL = chr(0)


@job("tests.nul_result")
def nul_result(ctx: RunContext) -> dict[str, Any]:
    """Returns a result with a NUL character deep inside it."""
    return {"rows": [1, {"note": f"a{NUL}b"}]}


@job("tests.nan_result")
def nan_result(ctx: RunContext) -> dict[str, Any]:
    """Returns a result with NaN inside it, which Python's json writes and jsonb refuses."""
    return {"ratio": float("nan")}


@job("tests.surrogate_error")
def surrogate_error(ctx: RunContext) -> None:
    """Raises an exception whose message holds a lone surrogate, which is not UTF-8."""
    raise ValueError("half an emoji: \ud83d")


@job("tests.nul_error")
def nul_error(ctx: RunContext) -> None:
    """Raises an exception whose message holds a NUL character."""
    raise ValueError(f"a byte {NUL} nobody can store")


@job("tests.nul_state", state=StateSpec("tests.nul", initial=lambda: {"steps": 1}))
def nul_state(ctx: RunContext) -> str:
    """Changes its state to hold a NUL character; returns only if the change was taken."""
    assert ctx.state is not None
    ctx.state.change(lambda data: data.update(steps=2, note=f"a{NUL}b"))
    return "the change went through"


@job("tests.nul_output", state=StateSpec("tests.nul", initial=lambda: {"output": ""}))
def nul_output(ctx: RunContext) -> str:
    """Prints a NUL character into an output buffer and stores what the buffer keeps."""
    assert ctx.state is not None
    out = OutputBuffer(max_bytes=1024, max_lines=10)
    out.write(f"before{NUL}after\n")
    ctx.state.change(lambda data: data.update(output=out.text))
    return "printed"


# -- the process executor (django_weft.engine.worker.process_pool) ---------------------------


@job(
    "tests.in_process",
    args=SleepArgs,
    executor="process",
    state=StateSpec("tests.process_state", initial=lambda: {"pid": None}),
)
def in_process(ctx: RunContext, seconds: float) -> dict[str, Any]:
    """Runs in a child process: records its pid in its state, sleeps through the context
    (so an abort stops it), and returns where it ran and what it was told."""
    assert ctx.state is not None
    ctx.state.change(lambda data: data.update(pid=os.getpid()))
    ctx.sleep(seconds)
    due = ctx.due.isoformat() if ctx.due is not None else None
    return {"pid": os.getpid(), "attempt": ctx.attempt, "due": due, "run": str(ctx.run_id)}


@job("tests.catastrophic_regex", executor="process", timeout=0.5)
def catastrophic_regex(ctx: RunContext) -> bool:
    """Holds the GIL inside the regex engine for longer than any test runs (2**40 paths):
    nothing but killing its process stops it."""
    return re.match(r"(a+)+$", "a" * 40 + "b") is not None


@job("tests.exits_in_process", executor="process")
def exits_in_process(ctx: RunContext) -> None:
    """Ends its own child process with exit code 3, as a crash in C code would."""
    os._exit(3)


@job("tests.queued_for_processes", queue="cpu")
def queued_for_processes(ctx: RunContext) -> int:
    """A job without an executor of its own: where it runs is its queue's choice."""
    return os.getpid()


@job(
    "tests.flaky_printer",
    state=StateSpec("tests.build_state", initial=lambda: {"output": ""}),
    retry=Retry(max_attempts=2, backoff=60, jitter=0),
)
def flaky_printer(ctx: RunContext) -> int:
    """Prints which attempt it is, as a new buffer each attempt does, then fails its first
    attempt: the second's output replaces the first's in the run's state."""
    assert ctx.state is not None
    ctx.state.change(lambda data: data.update(output=f"attempt {ctx.attempt} printed this\n"))
    if ctx.attempt < 2:
        raise ConnectionError("the mail server hung up")
    return ctx.attempt

"""The shell job: its state document carries the output, one run at a time.

The "process" is simulated (one line every 30 ms) so the example runs anywhere; a
real one would read a subprocess's pipe the same way. The output is bounded and its
writes throttled by the job itself, and the last write happens in a ``finally`` so it
reaches the outcome after an abort too. ``finish`` records an entry in a shared
document and chains the notify job, atomically with the outcome.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from django_weft import FinishContext, Outcome, OutputBuffer, RunContext, StateSpec, job
from django_weft.models import Document

ENTRIES = "shell:entries"
LINE_INTERVAL = 0.03
WRITE_INTERVAL = 0.05


class ShellArgs(serializers.Serializer[Any]):
    command = serializers.CharField(max_length=200)
    lines = serializers.IntegerField(min_value=0, max_value=100_000)


class ShellResult(serializers.Serializer[Any]):
    exit = serializers.IntegerField()
    output = serializers.CharField(allow_blank=True, trim_whitespace=False)


class NotifyArgs(serializers.Serializer[Any]):
    text = serializers.CharField(max_length=200)


def entries(tx: FinishContext) -> Document:
    return tx.document(ENTRIES, schema="shell.entries", initial=lambda: {"list": []})


@job("shell.notify", args=NotifyArgs)
def notify(ctx: RunContext, text: str) -> str:
    """Announces a finished command."""
    return f"notified: {text}"


@notify.finish
def notify_finished(outcome: Outcome, tx: FinishContext) -> None:
    if outcome.ok:
        tx.change(entries(tx), lambda data: data["list"].append(outcome.result))


@job(
    "shell.run",
    args=ShellArgs,
    result=ShellResult,
    state=StateSpec("shell.state", initial=lambda: {"output": ""}),
    concurrency=1,
)
def shell(ctx: RunContext, command: str, lines: int) -> dict[str, Any]:
    """Runs ``command`` (simulated: ``lines`` lines of output, one every 30 ms)."""
    assert ctx.state is not None
    state = ctx.state
    out = OutputBuffer(max_bytes=64 * 1024, max_lines=2_000)

    def write() -> None:
        text = out.text
        state.change(lambda data: data.__setitem__("output", text))

    throttle = ctx.throttle(write, WRITE_INTERVAL)
    try:
        for number in range(1, lines + 1):
            ctx.sleep(LINE_INTERVAL)
            out.write(f"line {number}\n")
            throttle.mark()
        return {"exit": 0, "output": out.text}
    finally:
        throttle.stop()


@shell.finish
def shell_finished(outcome: Outcome, tx: FinishContext) -> None:
    command = outcome.args["command"]
    kept = (outcome.state or {}).get("output", "").count("\n")
    if outcome.ok:
        text = f"{command}: exit {outcome.result['exit']}, {kept} lines"
    else:
        text = f"{command}: interrupted ({outcome.kind}), {kept} lines kept"
    tx.change(entries(tx), lambda data: data["list"].append(text))
    tx.start(notify, {"text": command})

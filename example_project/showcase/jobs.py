"""The showcase: one job for each way a run ends, each writing terminal output, and a
release workflow that waits for a person's approval.

``manage.py demo`` starts one run of each (:data:`DEMO_RUNS`), so the operator's console
shows a run with coloured output, a failed run with its traceback, a run retried twice
before it succeeded (its attempts kept), a run stopped by its timeout and a checkout
that charges once though it is retried; a group of thumbnails with its callback; and one
:data:`release` (build, then the unit and end-to-end checks side by side, then a deploy
that waits for the signal ``approval``, which its owner sends from the run's page).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django_weft import OutputBuffer, Retry, RunContext, StateSpec, Step, job, workflow
from django_weft.models import Group

#: Each showcase run writes its terminal output here, as the shell job does.
OUTPUT = StateSpec("showcase.output", initial=lambda: {"output": ""})
#: ANSI colour codes of the build report's words.
GREEN, RED, YELLOW, BOLD, RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"
#: Seconds the slow job is given; it would take a minute.
SLOW_TIMEOUT = 3
#: Seconds between the lines a showcase job prints.
LINE_INTERVAL = 0.2


def printer(ctx: RunContext) -> tuple[OutputBuffer, Any]:
    """An output buffer, and a function that prints a line to it and saves the output."""
    assert ctx.state is not None
    state = ctx.state
    out = OutputBuffer(max_bytes=16 * 1024, max_lines=500)

    def say(line: str) -> None:
        out.write(line + "\n")
        text = out.text
        state.change(lambda data: data.__setitem__("output", text))
        ctx.sleep(LINE_INTERVAL)

    return out, say


@job("showcase.build", state=OUTPUT)
def build(ctx: RunContext) -> dict[str, int]:
    """A build log in colour: the console's run page shows it as a terminal would."""
    _, say = printer(ctx)
    say(f"{BOLD}building the site{RESET}")
    say(f"  {GREEN}ok{RESET}    templates (12)")
    say(f"  {YELLOW}warn{RESET}  images: 2 larger than 1 MB")
    say(f"  {GREEN}ok{RESET}    feeds (3)")
    say(f"{BOLD}{GREEN}done{RESET}: 17 files, 1 warning")
    return {"files": 17, "warnings": 1}


@job("showcase.import")
def import_feed(ctx: RunContext) -> None:
    """Fails at once: the console's overview lists it under its recent failures."""
    raise ConnectionError("the partner feed answered 503 Service Unavailable")


@job("showcase.flaky", state=OUTPUT, retry=Retry(max_attempts=3, backoff=2, jitter=0))
def flaky(ctx: RunContext) -> str:
    """Fails on its first two attempts and succeeds on the third: its page keeps all three."""
    _, say = printer(ctx)
    say(f"attempt {ctx.attempt}: connecting to the mail server")
    if ctx.attempt < 3:
        say(f"{RED}connection refused{RESET}")
        raise ConnectionRefusedError(f"the mail server refused attempt {ctx.attempt}")
    say(f"{GREEN}sent{RESET}")
    return "sent on attempt 3"


@job("showcase.slow", state=OUTPUT, timeout=SLOW_TIMEOUT)
def slow(ctx: RunContext) -> None:
    """Would take a minute, but its timeout asks it to stop after a few seconds."""
    _, say = printer(ctx)
    for second in range(60):
        say(f"rebuilding the search index: {second * 100 // 60}%")
        ctx.sleep(1)


@job("showcase.checkout", retry=Retry(max_attempts=3, backoff=1, jitter=0))
def checkout(ctx: RunContext, *, order: int) -> dict[str, int]:
    """Charges the card in a durable step, then the shipping service fails the first
    attempt: the retry ships, and reads the charge recorded by the first attempt instead
    of charging again."""
    charge = ctx.step("charge", lambda: {"order": order, "charged_on_attempt": ctx.attempt})
    if ctx.attempt == 1:
        raise ConnectionError("the shipping service did not answer")
    return {**charge, "shipped_on_attempt": ctx.attempt}


@job("showcase.thumbnail")
def thumbnail(ctx: RunContext, *, photo: int) -> dict[str, int]:
    """A member of the album's group: one photo's thumbnail."""
    return {"photo": photo, "bytes": 1000 + photo}


@job("showcase.album_ready")
def album_ready(ctx: RunContext, *, group: str, album: str) -> dict[str, object]:
    """The album's callback, started once the last thumbnail ended: reads the group."""
    finished = Group.objects.get(pk=group)
    sizes = [r["bytes"] for r in finished.members.values_list("result", flat=True) if r]
    return {"album": album, "summary": finished.summary(), "bytes": sum(sizes)}


#: What ``manage.py demo`` starts once: (job, args).
DEMO_RUNS: list[tuple[Any, dict[str, Any]]] = [
    (build, {}),
    (import_feed, {}),
    (flaky, {}),
    (slow, {}),
    (checkout, {"order": 1042}),
]

#: The photos of the album the demo starts as a group (with :func:`album_ready`).
ALBUM_PHOTOS = range(1, 7)


@job("showcase.release_build", state=OUTPUT)
def release_build(ctx: RunContext, *, ref: str) -> dict[str, str]:
    """The release's first step: builds the site at ``ref``."""
    _, say = printer(ctx)
    say(f"{BOLD}building {ref}{RESET}")
    say(f"  {GREEN}ok{RESET}    site-{ref}.tar.gz")
    return {"artifact": f"site-{ref}.tar.gz"}


@job("showcase.release_check", state=OUTPUT)
def release_check(ctx: RunContext, *, suite: str) -> dict[str, str]:
    """Checks the build its dependency made (``ctx.upstream``)."""
    _, say = printer(ctx)
    artifact = ctx.upstream["build"].result["artifact"]
    say(f"{BOLD}{suite} checks{RESET} of {artifact}")
    say(f"  {GREEN}passed{RESET}")
    return {"suite": suite, "artifact": artifact}


@job("showcase.release_deploy", state=OUTPUT)
def release_deploy(ctx: RunContext) -> str:
    """Waits (holding no worker) for the signal ``approval``, then deploys. The line it
    prints before waiting is a step: the run goes on from the top once approved, and the
    step is not done twice."""
    _, say = printer(ctx)
    ctx.step("asked", say, "waiting for the signal approval (send it from this page)")
    approval = ctx.wait_for("approval", timeout=timedelta(days=7))
    artifact = ctx.upstream["unit"].result["artifact"]
    by = approval.get("by", "someone") if isinstance(approval, dict) else "someone"
    say(f"{GREEN}approved{RESET} by {by}: deploying {artifact}")
    return f"deployed {artifact}"


#: The release the demo starts: its steps wait for each other, the deploy for a person.
release = workflow(
    "showcase.release",
    steps=[
        Step("build", release_build, args=lambda given: {"ref": given["ref"]}),
        Step("unit", release_check, after=["build"], args={"suite": "unit"}),
        Step("e2e", release_check, after=["build"], args={"suite": "end-to-end"}),
        Step("deploy", release_deploy, after=["unit", "e2e"], args={}),
    ],
)
